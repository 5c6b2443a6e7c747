// The CUDA backend's LayerNorm: one block per row for the row statistics and dinp (block sums in a
// fixed tree), and one thread per channel over the rows in order for dw and db (no atomics). The
// per-element arithmetic is the CPU backend's, in its order.
#include <type_traits>

#include "core/cuda/block_reduce.cuh"
#include "core/cuda/cuda_runtime.h"
#include "core/cuda/kernels.h"
#include "core/cuda/launch_config.h"
#include "core/elementwise.h"

namespace tz::cuda {
namespace {

// 256 threads a row: C = 1600 (gpt2-xl) is 7 elements a thread, C = 12288 is 48.
constexpr int kRowThreads = 256;

template <typename P>
__global__ void layernorm_forward_kernel(float* out, float* mean, float* rstd, const float* inp, const P* w,
                                         const P* b, int C) {
  __shared__ float buf[32];
  const std::size_t row = blockIdx.x;
  const float* x = inp + row * C;
  float sum = 0;
  for (int c = threadIdx.x; c < C; c += blockDim.x) sum += x[c];
  const float m = block_sum(sum, buf) / float(C);
  float sq = 0;
  for (int c = threadIdx.x; c < C; c += blockDim.x) sq += (x[c] - m) * (x[c] - m);
  const float var = block_sum(sq, buf) / float(C);
  const float s = 1.0f / sqrtf(var + math::kLayerNormEps);
  float* o = out + row * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) o[c] = (x[c] - m) * s * to_float(w[c]) + to_float(b[c]);
  if (threadIdx.x == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

template <typename P>
__global__ void layernorm_backward_dinp_kernel(float* dinp, const float* dout, const float* inp, const P* w,
                                               const float* mean, const float* rstd, int C) {
  __shared__ float buf[32];
  const std::size_t row = blockIdx.x;
  const float* d = dout + row * C;
  const float* x = inp + row * C;
  const float m = mean[row], s = rstd[row];
  float dnorm_sum = 0, dnorm_norm_sum = 0;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float norm = (x[c] - m) * s;
    const float dnorm = to_float(w[c]) * d[c];
    dnorm_sum += dnorm;
    dnorm_norm_sum += dnorm * norm;
  }
  const float dnorm_mean = block_sum(dnorm_sum, buf) / float(C);
  const float dnorm_norm_mean = block_sum(dnorm_norm_sum, buf) / float(C);
  float* di = dinp + row * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float norm = (x[c] - m) * s;
    const float dnorm = to_float(w[c]) * d[c];
    di[c] = di[c] + (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
  }
}

// dw[c] += sum_n norm[n, c] * dout[n, c], db[c] += sum_n dout[n, c]. A block owns 32 channels (one per
// lane: each row's read is a coalesced line); its 32 warps take every 32nd row in row order, and lane
// row ty == 0 adds the 32 partials in warp order.
constexpr int kColTile = 32;

__global__ void layernorm_backward_dwdb_kernel(float* dw, float* db, const float* dout, const float* inp,
                                               const float* mean, const float* rstd, int N, int C) {
  __shared__ float pw[kColTile][kColTile + 1], pb[kColTile][kColTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int c = blockIdx.x * kColTile + tx;
  float aw = 0, ab = 0;
  if (c < C)
    for (int n = ty; n < N; n += kColTile) {
      const std::size_t i = std::size_t(n) * C + c;
      const float m = mean[n], s = rstd[n];
      aw += (inp[i] - m) * s * dout[i];
      ab += dout[i];
    }
  pw[ty][tx] = aw;
  pb[ty][tx] = ab;
  __syncthreads();
  if (ty == 0 && c < C) {
    float sw = pw[0][tx], sb = pb[0][tx];
    for (int k = 1; k < kColTile; ++k) {
      sw += pw[k][tx];
      sb += pb[k][tx];
    }
    dw[c] += sw;
    db[c] += sb;
  }
}

}  // namespace

void layernorm_forward(cudaStream_t s, float* out, float* mean, float* rstd, const float* inp, CView w,
                       CView b, int N, int C) {
  TZ_CHECK(w.dtype == b.dtype, "layernorm weight and bias must share a dtype, got ", dtype_name(w.dtype),
           " and ", dtype_name(b.dtype));
  TZ_CHECK(N >= 0 && C > 0, "layernorm_forward needs N >= 0 rows and C > 0 channels, got ", N, " x ", C);
  with_param_type(w.dtype, "layernorm parameters", [&](auto* type) {
    using P = std::remove_cv_t<std::remove_pointer_t<decltype(type)>>;
    if (N == 0) return;
    layernorm_forward_kernel<<<unsigned(N), kRowThreads, 0, s>>>(
        out, mean, rstd, inp, static_cast<const P*>(w.ptr), static_cast<const P*>(b.ptr), C);
    TZ_CUDA_CHECK(cudaGetLastError());
  });
}

void layernorm_backward(cudaStream_t s, float* dinp, float* dw, float* db, const float* dout,
                        const float* inp, CView w, const float* mean, const float* rstd, int N, int C) {
  TZ_CHECK(N >= 0 && C > 0, "layernorm_backward needs N >= 0 rows and C > 0 channels, got ", N, " x ", C);
  with_param_type(w.dtype, "layernorm parameters", [&](auto* type) {
    using P = std::remove_cv_t<std::remove_pointer_t<decltype(type)>>;
    if (N == 0) return;
    layernorm_backward_dinp_kernel<<<unsigned(N), kRowThreads, 0, s>>>(
        dinp, dout, inp, static_cast<const P*>(w.ptr), mean, rstd, C);
    TZ_CUDA_CHECK(cudaGetLastError());
  });
  if (N == 0) return;
  const unsigned tiles = unsigned((C + kColTile - 1) / kColTile);
  layernorm_backward_dwdb_kernel<<<tiles, dim3(kColTile, kColTile), 0, s>>>(dw, db, dout, inp, mean, rstd, N,
                                                                            C);
  TZ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tz::cuda
