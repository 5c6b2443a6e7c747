// Grid-stride conversion kernels over dtype.h's TZ_HOST_DEVICE functions.
#include "core/cuda/cast_kernels.h"
#include "core/cuda/cuda_runtime.h"

namespace tz::cuda {
namespace {

template <typename D, typename S>
__global__ void cast_kernel(D* dst, const S* src, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    dst[i] = from_float<D>(to_float(src[i]));
}

template <typename D, typename S>
void launch(D* dst, const S* src, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  constexpr int kThreads = 256;
  std::size_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > 65535) blocks = 65535;
  cast_kernel<<<unsigned(blocks), kThreads, 0, stream>>>(dst, src, n);
  TZ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void cast_f32_to_bf16(bf16* dst, const float* src, std::size_t n, cudaStream_t s) { launch(dst, src, n, s); }
void cast_f32_to_fp16(fp16* dst, const float* src, std::size_t n, cudaStream_t s) { launch(dst, src, n, s); }
void cast_bf16_to_f32(float* dst, const bf16* src, std::size_t n, cudaStream_t s) { launch(dst, src, n, s); }

}  // namespace tz::cuda
