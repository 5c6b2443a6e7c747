// Device: where a rank computes (cpu or cuda). It allocates typed buffers under a byte budget and
// runs kernels through its backend table. On cpu, "device memory" is host memory under --device-mem.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "core/dtype.h"
#include "core/memory_budget.h"

namespace tz {

class Backend;

enum class DeviceKind { cpu, cuda };

DeviceKind parse_device_kind(const std::string& s);
std::string device_kind_name(DeviceKind k);

class Device {
 public:
  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  DeviceKind kind() const { return kind_; }
  MemoryBudget& memory() { return memory_; }
  const MemoryBudget& memory() const { return memory_; }
  Backend& backend() { return *backend_; }

  // Raw allocation under the budget; `what` names the buffer in the budget error.
  virtual void* allocate(std::size_t bytes, const std::string& what) = 0;
  virtual void deallocate(void* p, std::size_t bytes) noexcept = 0;

 protected:
  Device(DeviceKind kind, std::size_t budget, std::unique_ptr<Backend> backend, std::string tier = "device");

 private:
  DeviceKind kind_;
  MemoryBudget memory_;
  std::unique_ptr<Backend> backend_;
};

// The CPU device: 64-byte aligned host memory, oneDNN + OpenMP kernels. `tier` names its budget in
// messages: "device" for the compute device, "host" for the host tier offloaded states live in.
std::unique_ptr<Device> make_cpu_device(std::size_t budget = kUnlimited, const std::string& tier = "device");

// Creates the requested device; cuda fails with a clear error when it is not built or not present.
std::unique_ptr<Device> make_device(DeviceKind kind, std::size_t budget = kUnlimited);

// A typed, move-only buffer of `count` elements on a device. No copy: device memory is never
// duplicated implicitly.
template <typename T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(Device& dev, std::size_t count, const std::string& what)
      : dev_(&dev), count_(count), ptr_(count ? static_cast<T*>(dev.allocate(count * sizeof(T), what)) : nullptr) {}
  ~Buffer() { reset(); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept
      : dev_(std::exchange(o.dev_, nullptr)), count_(std::exchange(o.count_, 0)), ptr_(std::exchange(o.ptr_, nullptr)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      dev_ = std::exchange(o.dev_, nullptr);
      count_ = std::exchange(o.count_, 0);
      ptr_ = std::exchange(o.ptr_, nullptr);
    }
    return *this;
  }

  void reset() noexcept {
    if (ptr_) dev_->deallocate(ptr_, count_ * sizeof(T));
    ptr_ = nullptr;
    count_ = 0;
  }

  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }
  bool empty() const { return count_ == 0; }
  // Host access; valid on the cpu device (and for host-visible memory).
  T& operator[](std::size_t i) { return ptr_[i]; }
  const T& operator[](std::size_t i) const { return ptr_[i]; }
  T* begin() { return ptr_; }
  T* end() { return ptr_ + count_; }
  const T* begin() const { return ptr_; }
  const T* end() const { return ptr_ + count_; }

 private:
  Device* dev_ = nullptr;
  std::size_t count_ = 0;
  T* ptr_ = nullptr;
};

}  // namespace tz
