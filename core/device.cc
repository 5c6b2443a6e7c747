// The Device base and what each device kind needs of the memory plan (its traits';
// make_device is in make_device.cc, outside core, so that core links nothing from CUDA).
#include "core/device.h"

#include "core/backend.h"
#include "core/error.h"
#include "core/profiled_backend.h"

namespace tz {

Device::Device(DeviceKind kind, std::unique_ptr<Backend> backend)
    : kind_(kind), backend_(std::make_unique<ProfiledBackend>(std::move(backend))) {}
Device::~Device() = default;

Backend& Device::backend() { return *backend_; }

void Device::set_op_profile(OpProfile* profile) { backend_->attach(profile); }

std::unique_ptr<Event> Device::create_timing_event() {
  TZ_FAIL("the ", device_kind_name(kind_), " device has no timing events");
}

double Event::ms_since(Event&) { TZ_FAIL("an event made without timing cannot be timed (use create_timing_event)"); }

std::size_t gemm_workspace_floats(DeviceKind kind, DType dtype, const GemmShape& s) {
  return device_traits(kind).gemm_workspace_floats(dtype, s);
}

std::size_t attention_saved_floats(DeviceKind kind, const AttentionShape& a, DType act) {
  return device_traits(kind).attention_saved_floats(a, act);
}
std::size_t attention_scratch_floats(DeviceKind kind, const AttentionShape& a, DType act) {
  return device_traits(kind).attention_scratch_floats(a, act);
}

AttentionKernels attention_kernels(const std::string& math, DType dtype) {
  if (math == "fp32") return AttentionKernels::fp32;
  if (math == "bf16") return AttentionKernels::bf16;
  if (math == "cudnn") return AttentionKernels::cudnn;
  if (math == "auto")
    return dtype == DType::bf16 || dtype == DType::f16 ? AttentionKernels::cudnn : AttentionKernels::fp32;
  TZ_FAIL("--attention-math '", math, "' is not one of auto, fp32, bf16, cudnn");
}

}  // namespace tz
