// Poisoned device memory (the TZ_POISON_DEVICE_MEMORY build, with AddressSanitizer): the CPU backend
// registers every device allocation here and keeps it poisoned except while one of its own kernels,
// copies or a collective holds it open, so an access to device memory from anywhere else (the engine,
// the model, the training loop, a test) stops the program with ASan's report, as it would fault on a
// GPU. In the normal build every call here does nothing.
#pragma once

#include <cstddef>
#include <initializer_list>

namespace tz {

#if defined(TZ_POISON_DEVICE_MEMORY)
inline constexpr bool kPoisonDeviceMemory = true;
#else
inline constexpr bool kPoisonDeviceMemory = false;
#endif

namespace poison_detail {
void add(void* p, std::size_t bytes);
void remove(void* p) noexcept;
void open(const void* p) noexcept;
void close(const void* p) noexcept;
}  // namespace poison_detail

// Registers [p, p + bytes) as device memory (poisoned from now on) and unregisters it.
inline void register_device_memory(void* p, std::size_t bytes) {
  if constexpr (kPoisonDeviceMemory) poison_detail::add(p, bytes);
}
inline void unregister_device_memory(void* p) noexcept {
  if constexpr (kPoisonDeviceMemory) poison_detail::remove(p);
}

// Opens the device allocations that contain the given pointers for as long as it lives (nested and
// concurrent openings are counted); pointers outside device memory (host buffers) are ignored.
class DeviceAccess {
 public:
  static constexpr int kMax = 8;
  DeviceAccess() = default;
  DeviceAccess(std::initializer_list<const void*> ptrs) {
    if constexpr (kPoisonDeviceMemory) {
      for (const void* p : ptrs)
        if (p && n_ < kMax) poison_detail::open(ptrs_[n_++] = p);
    }
  }
  ~DeviceAccess() { reset(); }
  DeviceAccess(const DeviceAccess&) = delete;
  DeviceAccess& operator=(const DeviceAccess&) = delete;
  DeviceAccess(DeviceAccess&& o) noexcept : n_(o.n_) {
    for (int i = 0; i < n_; ++i) ptrs_[i] = o.ptrs_[i];
    o.n_ = 0;
  }
  DeviceAccess& operator=(DeviceAccess&& o) noexcept {
    if (this != &o) {
      reset();
      n_ = o.n_;
      for (int i = 0; i < n_; ++i) ptrs_[i] = o.ptrs_[i];
      o.n_ = 0;
    }
    return *this;
  }
  void reset() noexcept {
    if constexpr (kPoisonDeviceMemory) {
      for (int i = 0; i < n_; ++i) poison_detail::close(ptrs_[i]);
    }
    n_ = 0;
  }

 private:
  const void* ptrs_[kMax] = {};
  int n_ = 0;
};

}  // namespace tz
