// The CUDA backend's Llama operations: RMSNorm (one block per row, block sums in a fixed tree; dw summed
// over rows by one thread per channel in a fixed order, no atomics, as layernorm_kernels.cu's dw),
// rotary position embedding and SwiGLU (elementwise over core/elementwise.h's math, in the CPU backend's
// order of operations, so they give its bits).
#include <type_traits>

#include "core/cuda/block_reduce.cuh"
#include "core/cuda/cuda_runtime.h"
#include "core/cuda/kernels.h"
#include "core/cuda/launch_config.h"
#include "core/elementwise.h"

namespace tz::cuda {
namespace {

// 256 threads a row, as LayerNorm's: Llama 3.2 1B's C = 2048 is 8 elements a thread, 70B's 8192 is 32.
constexpr int kRowThreads = 256;

// out = x * rstd * w with rstd = math::rms_rstd(sum of x^2), the CPU backend's products in its order.
template <typename P>
__global__ void rmsnorm_forward_kernel(float* out, float* rstd, const float* inp, const P* w, int C,
                                       float eps) {
  __shared__ float buf[32];
  const std::size_t row = blockIdx.x;
  const float* x = inp + row * C;
  float ss = 0;
  for (int c = threadIdx.x; c < C; c += blockDim.x) ss += x[c] * x[c];
  const float r = math::rms_rstd(block_sum(ss, buf), C, eps);
  float* o = out + row * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) o[c] = x[c] * r * to_float(w[c]);
  if (threadIdx.x == 0) rstd[row] = r;
}

// dinp += (dy w) r - x r^3 mean(dy w x), written as the CPU backend writes it.
template <typename P>
__global__ void rmsnorm_backward_dinp_kernel(float* dinp, const float* dout, const float* inp, const P* w,
                                             const float* rstd, int C) {
  __shared__ float buf[32];
  const std::size_t row = blockIdx.x;
  const float* d = dout + row * C;
  const float* x = inp + row * C;
  const float r = rstd[row];
  float dot = 0;
  for (int c = threadIdx.x; c < C; c += blockDim.x) dot += d[c] * to_float(w[c]) * x[c];
  const float k = block_sum(dot, buf) / float(C) * r * r * r;
  float* di = dinp + row * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) di[c] = di[c] + (d[c] * to_float(w[c]) * r - x[c] * k);
}

// dw[c] += sum_n dout[n, c] * inp[n, c] * rstd[n]. A block owns 32 channels (one per lane: each row's
// read is a coalesced line); its 32 warps take every 32nd row in row order, and lane row ty == 0 adds the
// 32 partials in warp order.
constexpr int kColTile = 32;

__global__ void rmsnorm_backward_dw_kernel(float* dw, const float* dout, const float* inp, const float* rstd,
                                           int N, int C) {
  __shared__ float part[kColTile][kColTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int c = blockIdx.x * kColTile + tx;
  float acc = 0;
  if (c < C)
    for (int n = ty; n < N; n += kColTile) {
      const std::size_t i = std::size_t(n) * C + c;
      acc += dout[i] * inp[i] * rstd[n];
    }
  part[ty][tx] = acc;
  __syncthreads();
  if (ty == 0 && c < C) {
    float s = part[0][tx];
    for (int k = 1; k < kColTile; ++k) s += part[k][tx];
    dw[c] += s;
  }
}

// One thread per rotary pair (row n, head h, channel j < hd/2 with j + hd/2): pairs = N * heads * half.
__global__ void rope_kernel(float* x, const float* table, std::size_t pairs, int T, int heads, int half,
                            int stride, bool inverse) {
  const float* sin_table = table + std::size_t(T) * half;
  for (std::size_t i = first_index(); i < pairs; i += grid_stride()) {
    const int j = int(i % half);
    const std::size_t nh = i / half;
    const int h = int(nh % heads);
    const std::size_t n = nh / heads;
    const std::size_t a = std::size_t(n % T) * half + j;
    const float sn = sin_table[a];
    float* p = x + n * stride + std::size_t(h) * (2 * half);
    float x1 = p[j], x2 = p[j + half];
    math::rope_rotate(x1, x2, table[a], inverse ? -sn : sn);
    p[j] = x1;
    p[j + half] = x2;
  }
}

__global__ void swiglu_forward_kernel(float* out, const float* gate_up, std::size_t n, int I) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    const float* g = gate_up + (i / I) * 2 * I + i % I;
    out[i] = math::swiglu(g[0], g[I]);
  }
}

__global__ void swiglu_backward_kernel(float* dgate_up, const float* gate_up, const float* dout,
                                       std::size_t n, int I) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    const std::size_t at = (i / I) * 2 * I + i % I;
    float dg, du;
    math::swiglu_grad(gate_up[at], gate_up[at + I], dout[i], dg, du);
    dgate_up[at] = dg;
    dgate_up[at + I] = du;
  }
}

void check_launch() { TZ_CUDA_CHECK(cudaGetLastError()); }

}  // namespace

void rmsnorm_forward(cudaStream_t s, float* out, float* rstd, const float* inp, CView w, int N, int C,
                     float eps) {
  TZ_CHECK(N >= 0 && C > 0, "rmsnorm_forward needs N >= 0 rows and C > 0 channels, got ", N, " x ", C);
  with_param_type(w.dtype, "rmsnorm weights", [&](auto* type) {
    using P = std::remove_cv_t<std::remove_pointer_t<decltype(type)>>;
    if (N == 0) return;
    rmsnorm_forward_kernel<<<unsigned(N), kRowThreads, 0, s>>>(out, rstd, inp, static_cast<const P*>(w.ptr),
                                                               C, eps);
    check_launch();
  });
}

void rmsnorm_backward(cudaStream_t s, float* dinp, float* dw, const float* dout, const float* inp, CView w,
                      const float* rstd, int N, int C) {
  TZ_CHECK(N >= 0 && C > 0, "rmsnorm_backward needs N >= 0 rows and C > 0 channels, got ", N, " x ", C);
  with_param_type(w.dtype, "rmsnorm weights", [&](auto* type) {
    using P = std::remove_cv_t<std::remove_pointer_t<decltype(type)>>;
    if (N == 0) return;
    rmsnorm_backward_dinp_kernel<<<unsigned(N), kRowThreads, 0, s>>>(dinp, dout, inp,
                                                                     static_cast<const P*>(w.ptr), rstd, C);
    check_launch();
  });
  if (N == 0) return;
  const unsigned tiles = unsigned((C + kColTile - 1) / kColTile);
  rmsnorm_backward_dw_kernel<<<tiles, dim3(kColTile, kColTile), 0, s>>>(dw, dout, inp, rstd, N, C);
  check_launch();
}

void rope(cudaStream_t s, float* x, const float* table, int N, int T, int heads, int hd, int stride,
          bool inverse) {
  TZ_CHECK(N >= 0 && T > 0 && heads >= 0 && hd > 0 && hd % 2 == 0,
           "rope needs N >= 0, T > 0, heads >= 0 and an ", "even head size, got N=", N, " T=", T,
           " heads=", heads, " hd=", hd);
  TZ_CHECK(std::size_t(heads) * hd <= std::size_t(stride), "rope: ", heads, " heads of ", hd,
           " do not fit in rows of ", stride, " floats");
  const std::size_t pairs = std::size_t(N) * heads * (hd / 2);
  if (pairs == 0) return;
  rope_kernel<<<grid_blocks(pairs), kThreads, 0, s>>>(x, table, pairs, T, heads, hd / 2, stride, inverse);
  check_launch();
}

void swiglu_forward(cudaStream_t s, float* out, const float* gate_up, int N, int I) {
  TZ_CHECK(N >= 0 && I >= 0, "swiglu_forward needs N, I >= 0, got ", N, " x ", I);
  const std::size_t n = std::size_t(N) * I;
  if (n == 0) return;
  swiglu_forward_kernel<<<grid_blocks(n), kThreads, 0, s>>>(out, gate_up, n, I);
  check_launch();
}

void swiglu_backward(cudaStream_t s, float* dgate_up, const float* gate_up, const float* dout, int N, int I) {
  TZ_CHECK(N >= 0 && I >= 0, "swiglu_backward needs N, I >= 0, got ", N, " x ", I);
  const std::size_t n = std::size_t(N) * I;
  if (n == 0) return;
  swiglu_backward_kernel<<<grid_blocks(n), kThreads, 0, s>>>(dgate_up, gate_up, dout, n, I);
  check_launch();
}

}  // namespace tz::cuda
