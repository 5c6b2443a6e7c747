// The CUDA backend's AdamW: math::adamw_update per element with the CPU Adam's coefficients
// (adam_coeffs: bias corrections in double, rounded once), so a GPU step gives the CPU's bits; the
// working copy is written through from_float in the same pass.
#include <type_traits>

#include "core/cpu_adam.h"
#include "core/cuda/cuda_runtime.h"
#include "core/cuda/kernels.h"
#include "core/cuda/launch_config.h"
#include "core/elementwise.h"

namespace tz::cuda {
namespace {

// W: the working copy's element type, or void when there is none.
template <typename W>
__global__ void adamw_kernel(float* p, float* m, float* v, const float* g, std::size_t n, math::AdamCoeffs c,
                             W* working) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    float pi = p[i], mi = m[i], vi = v[i];
    math::adamw_update(pi, mi, vi, g[i], c);
    p[i] = pi;
    m[i] = mi;
    v[i] = vi;
    if constexpr (!std::is_void_v<W>) working[i] = from_float<W>(pi);
  }
}

template <typename W>
void launch(cudaStream_t s, float* p, float* m, float* v, const float* g, std::size_t n,
            const math::AdamCoeffs& c, void* working) {
  adamw_kernel<W><<<grid_blocks(n), kThreads, 0, s>>>(p, m, v, g, n, c, static_cast<W*>(working));
  TZ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void adamw(cudaStream_t s, float* p, float* m, float* v, const float* g, std::size_t n, const AdamStep& step,
           void* working, DType working_type) {
  const math::AdamCoeffs c = adam_coeffs(step);
  if (working) {
    TZ_CHECK(working_type == DType::f32 || working_type == DType::bf16 || working_type == DType::f16,
             "GPU Adam cannot write working params as ", dtype_name(working_type),
             ": use fp32, bf16 or fp16");
  }
  if (n == 0) return;
  if (!working) return launch<void>(s, p, m, v, g, n, c, nullptr);
  switch (working_type) {
    case DType::f32:
      return launch<float>(s, p, m, v, g, n, c, working);
    case DType::bf16:
      return launch<bf16>(s, p, m, v, g, n, c, working);
    default:
      return launch<fp16>(s, p, m, v, g, n, c, working);
  }
}

}  // namespace tz::cuda
