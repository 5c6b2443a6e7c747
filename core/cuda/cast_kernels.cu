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

template <typename S>
void launch_from(void* dst, DType dt, const S* src, std::size_t n, cudaStream_t stream) {
  switch (dt) {
    case DType::f32:
      return launch(static_cast<float*>(dst), src, n, stream);
    case DType::bf16:
      return launch(static_cast<bf16*>(dst), src, n, stream);
    case DType::f16:
      return launch(static_cast<fp16*>(dst), src, n, stream);
    default:
      TZ_FAIL("cannot cast to ", dtype_name(dt), " on the GPU: use fp32, bf16 or fp16");
  }
}

}  // namespace

void cast_any(void* dst, DType dt, const void* src, DType st, std::size_t n, cudaStream_t s) {
  switch (st) {
    case DType::f32:
      return launch_from(dst, dt, static_cast<const float*>(src), n, s);
    case DType::bf16:
      return launch_from(dst, dt, static_cast<const bf16*>(src), n, s);
    case DType::f16:
      return launch_from(dst, dt, static_cast<const fp16*>(src), n, s);
    default:
      TZ_FAIL("cannot cast from ", dtype_name(st), " on the GPU: use fp32, bf16 or fp16");
  }
}

void cast_f32_to_bf16(bf16* dst, const float* src, std::size_t n, cudaStream_t s) { launch(dst, src, n, s); }
void cast_f32_to_fp16(fp16* dst, const float* src, std::size_t n, cudaStream_t s) { launch(dst, src, n, s); }
void cast_bf16_to_f32(float* dst, const bf16* src, std::size_t n, cudaStream_t s) { launch(dst, src, n, s); }

}  // namespace tz::cuda
