// One io_uring instance, owned: what UringEngine drives.
#pragma once

#include <memory>

struct io_uring;

namespace tz {

// One io_uring instance with `entries` submission slots. Move-only; the ring lives on the heap so a
// move never relocates the struct the kernel's mmaps are described by.
class UringRing {
 public:
  // Throws tz::Error with the errno (ENOSYS: kernel without io_uring; EPERM: disabled by
  // kernel.io_uring_disabled or a seccomp profile).
  explicit UringRing(unsigned entries);
  ~UringRing();
  UringRing(const UringRing&) = delete;
  UringRing& operator=(const UringRing&) = delete;
  UringRing(UringRing&&) noexcept = default;
  UringRing& operator=(UringRing&&) noexcept = default;

  io_uring* get() { return ring_.get(); }
  unsigned entries() const { return entries_; }

 private:
  struct Deleter {
    void operator()(io_uring* r) const noexcept;
  };
  std::unique_ptr<io_uring, Deleter> ring_;
  unsigned entries_ = 0;
};

}  // namespace tz
