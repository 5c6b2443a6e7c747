// Page-aligned host memory, optionally locked in RAM ("pinned") with mlock(2) so the kernel never pages
// it out under an in-flight transfer: the pinning policy, the message for a refused lock, and
// AlignedBuffer, a move-only page-aligned buffer for O_DIRECT I/O outside the memory plan (benchmarks,
// tests). The CPU device's pinned-host allocator locks its pages the same way.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <span>
#include <string>

namespace tz {

// O_DIRECT needs the buffer, the file offset and the length aligned to the logical block size;
// 4096 covers every device we meet (512-byte and 4K-native) and is the page size on x86-64.
inline constexpr std::size_t kDirectIoAlign = 4096;

constexpr std::size_t round_up(std::size_t n, std::size_t align) { return (n + align - 1) / align * align; }

enum class Pinning {
  none,         // plain aligned memory
  required,     // mlock or fail with a tz::Error that names RLIMIT_MEMLOCK and the need
  best_effort,  // mlock, or keep the memory unpinned and record why (pin_error())
};

// How pages get locked: mlock(2)'s signature (0, or -1 with errno). Tests pass one that fails with
// ENOMEM to stand in for an exhausted RLIMIT_MEMLOCK; nothing global is swapped.
using MlockFn = int (*)(const void* addr, std::size_t len);

// Locks [p, p + bytes) per the policy: returns "" when locked (or when pinning was not asked for),
// throws the describe_mlock_failure message when required and refused, and returns it when best_effort.
std::string lock_pages(void* p, std::size_t bytes, Pinning pinning, MlockFn mlock_fn = &::mlock);

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  // `bytes` is rounded up to a whole page. The contents are unspecified until written (zeroing a
  // multi-GiB staging buffer would cost seconds for nothing).
  explicit AlignedBuffer(std::size_t bytes, Pinning pinning = Pinning::none, MlockFn mlock_fn = &::mlock);
  ~AlignedBuffer();
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  AlignedBuffer(AlignedBuffer&& o) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept;

  std::byte* data() { return ptr_; }
  const std::byte* data() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  bool empty() const { return bytes_ == 0; }
  bool pinned() const { return pinned_; }
  // Why pinning was refused (best_effort only); empty when pinned or when pinning was not asked for.
  const std::string& pin_error() const { return pin_error_; }

  // A typed view of the first `count` elements; the count must fit.
  template <typename T>
  std::span<T> view(std::size_t count) {
    check_view(count * sizeof(T));
    return {reinterpret_cast<T*>(ptr_), count};
  }

  void reset() noexcept;

 private:
  void check_view(std::size_t bytes) const;

  std::byte* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  bool pinned_ = false;
  std::string pin_error_;
};

// The message for a refused mlock: the errno, RLIMIT_MEMLOCK (soft and hard), what this process has
// locked already and the need, with the fix.
std::string describe_mlock_failure(std::size_t need, int err);

}  // namespace tz
