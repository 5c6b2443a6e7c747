// The Device base and what each device kind needs of the memory plan (its traits';
// make_device is in make_device.cc, outside core, so that core links nothing from CUDA).
#include "core/device.h"

#include "core/backend.h"
#include "core/error.h"

namespace tz {

Device::Device(DeviceKind kind, std::unique_ptr<Backend> backend) : kind_(kind), backend_(std::move(backend)) {}
Device::~Device() = default;

std::size_t gemm_workspace_floats(DeviceKind kind, DType dtype, const GemmShape& s) {
  return device_traits(kind).gemm_workspace_floats(dtype, s);
}

std::size_t attention_saved_floats(DeviceKind kind, const AttentionShape& a, DType act) {
  return device_traits(kind).attention_saved_floats(a, act);
}
std::size_t attention_scratch_floats(DeviceKind kind, const AttentionShape& a, DType act) {
  return device_traits(kind).attention_scratch_floats(a, act);
}

}  // namespace tz
