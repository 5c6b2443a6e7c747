// Device kinds by name, the Device base, and what each kind needs of the memory plan (make_device is in
// make_device.cc, outside core, so that core links nothing from CUDA).
#include "core/device.h"

#include "core/backend.h"
#include "core/error.h"

namespace tz {

DeviceKind parse_device_kind(const std::string& s) {
  if (s == "cpu") return DeviceKind::cpu;
  if (s == "cuda" || s == "gpu") return DeviceKind::cuda;
  TZ_FAIL("unknown device '", s, "': use cpu or cuda");
}

std::string device_kind_name(DeviceKind k) { return k == DeviceKind::cpu ? "cpu" : "cuda"; }

std::string memory_kind_name(MemoryKind k) {
  switch (k) {
    case MemoryKind::device:
      return "device";
    case MemoryKind::pinned_host:
      return "pinned host";
    case MemoryKind::pageable_host:
      return "pageable host";
  }
  return "memory kind " + std::to_string(int(k));
}

Device::Device(DeviceKind kind, std::unique_ptr<Backend> backend) : kind_(kind), backend_(std::move(backend)) {}
Device::~Device() = default;

std::size_t gemm_workspace_floats(DeviceKind kind, DType dtype, const GemmShape& s) {
  return kind == DeviceKind::cpu ? cpu_gemm_workspace_floats(dtype, s) : 0;
}

// The cpu backend keeps the probabilities and their gradient ([B,NH,T,T] each); the cuda backend's fused
// kernels keep one log-sum-exp per row and use one float per row (rowsum of dout * out) as scratch.
std::size_t attention_saved_floats(DeviceKind kind, std::size_t B, std::size_t NH, std::size_t T) {
  return kind == DeviceKind::cpu ? B * NH * T * T : B * NH * T;
}
std::size_t attention_scratch_floats(DeviceKind kind, std::size_t B, std::size_t NH, std::size_t T) {
  return kind == DeviceKind::cpu ? B * NH * T * T : B * NH * T;
}

}  // namespace tz
