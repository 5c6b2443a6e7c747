// The CUDA backend's LayerNorm: one block per row for the row statistics and dinp (block sums in a
// fixed tree), and one thread per channel over the rows in order for dw and db (no atomics). The
// per-element arithmetic is the CPU backend's, in its order, in fp32 whatever the activations' type T:
// statistics stay fp32, out is rounded once to T, and dinp's += reads T and rounds the fp32 sum once.
#include "core/cuda/block_reduce.cuh"
#include "core/cuda/cuda_runtime.h"
#include "core/cuda/kernels.h"
#include "core/cuda/launch_config.h"
#include "core/elementwise.h"

namespace tz::cuda {
namespace {

// 256 threads a row: C = 1600 (gpt2-xl) is 7 elements a thread, C = 12288 is 48.
constexpr int kRowThreads = 256;

template <typename T, typename P>
__global__ void layernorm_forward_kernel(T* out, float* mean, float* rstd, const T* inp, const P* w,
                                         const P* b, int C) {
  __shared__ float buf[32];
  const std::size_t row = blockIdx.x;
  const T* x = inp + row * C;
  float sum = 0;
  for (int c = threadIdx.x; c < C; c += blockDim.x) sum += to_float(x[c]);
  const float m = block_sum(sum, buf) / float(C);
  float sq = 0;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float xc = to_float(x[c]);
    sq += (xc - m) * (xc - m);
  }
  const float var = block_sum(sq, buf) / float(C);
  const float s = 1.0f / sqrtf(var + math::kLayerNormEps);
  T* o = out + row * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x)
    o[c] = from_float<T>((to_float(x[c]) - m) * s * to_float(w[c]) + to_float(b[c]));
  if (threadIdx.x == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

template <typename T, typename P>
__global__ void layernorm_backward_dinp_kernel(T* dinp, const T* dout, const T* inp, const P* w,
                                               const float* mean, const float* rstd, int C) {
  __shared__ float buf[32];
  const std::size_t row = blockIdx.x;
  const T* d = dout + row * C;
  const T* x = inp + row * C;
  const float m = mean[row], s = rstd[row];
  float dnorm_sum = 0, dnorm_norm_sum = 0;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float norm = (to_float(x[c]) - m) * s;
    const float dnorm = to_float(w[c]) * to_float(d[c]);
    dnorm_sum += dnorm;
    dnorm_norm_sum += dnorm * norm;
  }
  const float dnorm_mean = block_sum(dnorm_sum, buf) / float(C);
  const float dnorm_norm_mean = block_sum(dnorm_norm_sum, buf) / float(C);
  T* di = dinp + row * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float norm = (to_float(x[c]) - m) * s;
    const float dnorm = to_float(w[c]) * to_float(d[c]);
    di[c] = from_float<T>(to_float(di[c]) + (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s);
  }
}

// dw[c] += sum_n norm[n, c] * dout[n, c], db[c] += sum_n dout[n, c]. A block owns 32 channels (one per
// lane: each row's read is a coalesced line); its 32 warps take every 32nd row in row order, and lane
// row ty == 0 adds the 32 partials in warp order.
constexpr int kColTile = 32;

template <typename T>
__global__ void layernorm_backward_dwdb_kernel(float* dw, float* db, const T* dout, const T* inp,
                                               const float* mean, const float* rstd, int N, int C) {
  __shared__ float pw[kColTile][kColTile + 1], pb[kColTile][kColTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int c = blockIdx.x * kColTile + tx;
  float aw = 0, ab = 0;
  if (c < C)
    for (int n = ty; n < N; n += kColTile) {
      const std::size_t i = std::size_t(n) * C + c;
      const float m = mean[n], s = rstd[n];
      const float d = to_float(dout[i]);
      aw += (to_float(inp[i]) - m) * s * d;
      ab += d;
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

void layernorm_forward(cudaStream_t s, View out, float* mean, float* rstd, CView inp, CView w, CView b, int N,
                       int C) {
  const DType act = activation_dtype("layernorm_forward", out, inp);
  TZ_CHECK(w.dtype == b.dtype, "layernorm weight and bias must share a dtype, got ", dtype_name(w.dtype),
           " and ", dtype_name(b.dtype));
  TZ_CHECK(N >= 0 && C > 0, "layernorm_forward needs N >= 0 rows and C > 0 channels, got ", N, " x ", C);
  with_activation_type(act, "layernorm_forward", [&](auto* atype) {
    using T = pointee_t<decltype(atype)>;
    with_param_type(w.dtype, "layernorm parameters", [&](auto* ptype) {
      using P = pointee_t<decltype(ptype)>;
      if (N == 0) return;
      layernorm_forward_kernel<<<unsigned(N), kRowThreads, 0, s>>>(
          static_cast<T*>(out.ptr), mean, rstd, static_cast<const T*>(inp.ptr), static_cast<const P*>(w.ptr),
          static_cast<const P*>(b.ptr), C);
      TZ_CUDA_CHECK(cudaGetLastError());
    });
  });
}

void layernorm_backward(cudaStream_t s, View dinp, float* dw, float* db, CView dout, CView inp, CView w,
                        const float* mean, const float* rstd, int N, int C) {
  const DType act = activation_dtype("layernorm_backward", dinp, dout, inp);
  TZ_CHECK(N >= 0 && C > 0, "layernorm_backward needs N >= 0 rows and C > 0 channels, got ", N, " x ", C);
  with_activation_type(act, "layernorm_backward", [&](auto* atype) {
    using T = pointee_t<decltype(atype)>;
    const T* d = static_cast<const T*>(dout.ptr);
    const T* x = static_cast<const T*>(inp.ptr);
    with_param_type(w.dtype, "layernorm parameters", [&](auto* ptype) {
      using P = pointee_t<decltype(ptype)>;
      if (N == 0) return;
      layernorm_backward_dinp_kernel<<<unsigned(N), kRowThreads, 0, s>>>(
          static_cast<T*>(dinp.ptr), d, x, static_cast<const P*>(w.ptr), mean, rstd, C);
      TZ_CUDA_CHECK(cudaGetLastError());
    });
    if (N == 0) return;
    const unsigned tiles = unsigned((C + kColTile - 1) / kColTile);
    layernorm_backward_dwdb_kernel<<<tiles, dim3(kColTile, kColTile), 0, s>>>(dw, db, d, x, mean, rstd, N, C);
    TZ_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace tz::cuda
