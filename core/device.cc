// Device construction, kind parsing, and the cpu device's aligned, budgeted host allocator.
#include "core/device.h"

#include <cstdlib>

#include "core/backend.h"
#include "core/error.h"

namespace tz {

DeviceKind parse_device_kind(const std::string& s) {
  if (s == "cpu") return DeviceKind::cpu;
  if (s == "cuda" || s == "gpu") return DeviceKind::cuda;
  TZ_FAIL("unknown device '", s, "': use cpu or cuda");
}

std::string device_kind_name(DeviceKind k) { return k == DeviceKind::cpu ? "cpu" : "cuda"; }

Device::Device(DeviceKind kind, std::size_t budget, std::unique_ptr<Backend> backend, std::string tier)
    : kind_(kind), memory_(std::move(tier), budget), backend_(std::move(backend)) {}

namespace {

class CpuDevice final : public Device {
 public:
  // The host tier is page-aligned, so its buffers can go straight to O_DIRECT I/O; the device 64-byte.
  CpuDevice(std::size_t budget, const std::string& tier)
      : Device(DeviceKind::cpu, budget, make_cpu_backend(), tier), align_(tier == "host" ? 4096 : 64) {}

  void* allocate(std::size_t bytes, const std::string& what) override {
    memory().reserve(bytes, what);
    std::size_t rounded = (bytes + align_ - 1) / align_ * align_;
    void* p = std::aligned_alloc(align_, rounded);
    if (!p) {
      memory().release(bytes);
      TZ_FAIL("host allocation of ", format_bytes(bytes), " for ", what, " failed (the machine is out of memory)");
    }
    return p;
  }

  void deallocate(void* p, std::size_t bytes) noexcept override {
    std::free(p);
    memory().release(bytes);
  }

 private:
  std::size_t align_;
};

}  // namespace

std::unique_ptr<Device> make_cpu_device(std::size_t budget, const std::string& tier) {
  return std::make_unique<CpuDevice>(budget, tier);
}

std::unique_ptr<Device> make_device(DeviceKind kind, std::size_t budget) {
  if (kind == DeviceKind::cpu) return make_cpu_device(budget);
  TZ_FAIL("the cuda device has no training backend in this build yet; use --device cpu");
}

}  // namespace tz
