// make_device: the one place that knows whether this build has the CUDA device; it installs the cuda
// factory into the device registry and makes any registered kind with its traits' factory. Compiled into
// the small library `devices` (with TZ_WITH_CUDA=1 and core_cuda when CUDA is built) rather than into
// core, so that core and what links only core stay free of CUDA.
#include <memory>
#include <mutex>

#include "core/device.h"
#include "core/error.h"

#if defined(TZ_WITH_CUDA) && TZ_WITH_CUDA
#include "core/cuda/cuda_device.h"
#include "core/cuda/cuda_runtime.h"
#define TZ_CUDA_BUILT 1
#else
#define TZ_CUDA_BUILT 0
#endif

namespace tz {
namespace {

#if TZ_CUDA_BUILT
cuda::Attention cuda_attention(const DeviceOptions& opt) {
  switch (opt.attention) {
    case AttentionKernels::cudnn:
      return cuda::Attention::cudnn;
    case AttentionKernels::bf16:
      return cuda::Attention::bf16;
    case AttentionKernels::fp32:
      break;
  }
  return cuda::Attention::fp32;
}
#endif

void install_factories() {
  static std::once_flag once;
  std::call_once(once, [] {
#if TZ_CUDA_BUILT
    set_device_factory(DeviceKind::cuda, [](const DeviceOptions& opt) -> std::unique_ptr<Device> {
      if (cuda::device_count() == 0)
        TZ_FAIL("--device cuda: no GPU was found (", cuda::unavailable_reason(), "); use --device cpu");
      cuda::CudaOptions cuda;
      cuda.tf32 = opt.tf32 ? cuda::Tf32::on : cuda::Tf32::off;
      cuda.attention = cuda_attention(opt);
      return cuda::make_cuda_device(opt, cuda);
    });
#endif
  });
}

}  // namespace

bool cuda_backend_built() { return TZ_CUDA_BUILT; }

bool device_kind_built(DeviceKind kind) {
  install_factories();
  return bool(device_traits(kind).make);
}

std::unique_ptr<Device> make_device(DeviceKind kind, const DeviceOptions& opt) {
  install_factories();
  const DeviceTraits& t = device_traits(kind);
  if (!t.make) TZ_FAIL("--device ", t.name, ": ", t.unavailable);
  return t.make(opt);
}

}  // namespace tz
