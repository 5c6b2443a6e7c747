// make_device: the one place that knows whether this build has the CUDA device. Compiled into the small
// library `devices` (with TZ_WITH_CUDA=1 and core_cuda when CUDA is built) rather than into core, so that
// core and what links only core stay free of CUDA.
#include <memory>

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

bool cuda_backend_built() { return TZ_CUDA_BUILT; }

std::unique_ptr<Device> make_device(DeviceKind kind, const DeviceOptions& opt) {
  if (kind == DeviceKind::cpu) return make_cpu_device(opt);
#if TZ_CUDA_BUILT
  if (cuda::device_count() == 0)
    TZ_FAIL("--device cuda: no GPU was found (", cuda::unavailable_reason(), "); use --device cpu");
  return cuda::make_cuda_device(opt, {opt.tf32 ? cuda::Tf32::on : cuda::Tf32::off,
                                      opt.attention_bf16 ? cuda::Attention::bf16 : cuda::Attention::fp32});
#else
  TZ_FAIL(
      "--device cuda: this build has no CUDA backend (configure with -DTZ_CUDA=ON where the CUDA toolkit is "
      "installed); use --device cpu");
#endif
}

}  // namespace tz
