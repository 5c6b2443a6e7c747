// The CUDA backend's Llama operations: RMSNorm (one block per row, block sums in a fixed tree; dw summed
// over rows by one thread per channel in a fixed order, no atomics, as layernorm_kernels.cu's dw),
// rotary position embedding and SwiGLU (elementwise over core/elementwise.h's math, in the CPU backend's
// order of operations, so they give its bits). Activations are T (float, bf16 or fp16), computed in fp32
// and rounded once where stored (kernels.h); rstd stays fp32.
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
template <typename T, typename P>
__global__ void rmsnorm_forward_kernel(T* out, float* rstd, const T* inp, const P* w, int C, float eps) {
  __shared__ float buf[32];
  const std::size_t row = blockIdx.x;
  const T* x = inp + row * C;
  float ss = 0;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float xc = to_float(x[c]);
    ss += xc * xc;
  }
  const float r = math::rms_rstd(block_sum(ss, buf), C, eps);
  T* o = out + row * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) o[c] = from_float<T>(to_float(x[c]) * r * to_float(w[c]));
  if (threadIdx.x == 0) rstd[row] = r;
}

// dinp += (dy w) r - x r^3 mean(dy w x), written as the CPU backend writes it.
template <typename T, typename P>
__global__ void rmsnorm_backward_dinp_kernel(T* dinp, const T* dout, const T* inp, const P* w,
                                             const float* rstd, int C) {
  __shared__ float buf[32];
  const std::size_t row = blockIdx.x;
  const T* d = dout + row * C;
  const T* x = inp + row * C;
  const float r = rstd[row];
  float dot = 0;
  for (int c = threadIdx.x; c < C; c += blockDim.x) dot += to_float(d[c]) * to_float(w[c]) * to_float(x[c]);
  const float k = block_sum(dot, buf) / float(C) * r * r * r;
  T* di = dinp + row * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x)
    di[c] = from_float<T>(to_float(di[c]) + (to_float(d[c]) * to_float(w[c]) * r - to_float(x[c]) * k));
}

// dw[c] += sum_n dout[n, c] * inp[n, c] * rstd[n]. A block owns 32 channels (one per lane: each row's
// read is a coalesced line); its 32 warps take every 32nd row in row order, and lane row ty == 0 adds the
// 32 partials in warp order.
constexpr int kColTile = 32;

template <typename T>
__global__ void rmsnorm_backward_dw_kernel(float* dw, const T* dout, const T* inp, const float* rstd, int N,
                                           int C) {
  __shared__ float part[kColTile][kColTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int c = blockIdx.x * kColTile + tx;
  float acc = 0;
  if (c < C)
    for (int n = ty; n < N; n += kColTile) {
      const std::size_t i = std::size_t(n) * C + c;
      acc += to_float(dout[i]) * to_float(inp[i]) * rstd[n];
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
template <typename T>
__global__ void rope_kernel(T* x, const float* table, std::size_t pairs, int seq_len, int heads, int half,
                            int stride, bool inverse) {
  const float* sin_table = table + std::size_t(seq_len) * half;
  for (std::size_t i = first_index(); i < pairs; i += grid_stride()) {
    const int j = int(i % half);
    const std::size_t nh = i / half;
    const int h = int(nh % heads);
    const std::size_t n = nh / heads;
    const std::size_t a = std::size_t(n % seq_len) * half + j;
    const float sn = sin_table[a];
    T* p = x + n * stride + std::size_t(h) * (2 * half);
    float x1 = to_float(p[j]), x2 = to_float(p[j + half]);
    math::rope_rotate(x1, x2, table[a], inverse ? -sn : sn);
    p[j] = from_float<T>(x1);
    p[j + half] = from_float<T>(x2);
  }
}

template <typename T>
__global__ void swiglu_forward_kernel(T* out, const T* gate_up, std::size_t n, int I) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    const T* g = gate_up + (i / I) * 2 * I + i % I;
    out[i] = from_float<T>(math::swiglu(to_float(g[0]), to_float(g[I])));
  }
}

template <typename T>
__global__ void swiglu_backward_kernel(T* dgate_up, const T* gate_up, const T* dout, std::size_t n, int I) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    const std::size_t at = (i / I) * 2 * I + i % I;
    float dg, du;
    math::swiglu_grad(to_float(gate_up[at]), to_float(gate_up[at + I]), to_float(dout[i]), dg, du);
    dgate_up[at] = from_float<T>(dg);
    dgate_up[at + I] = from_float<T>(du);
  }
}

void check_launch() { TZ_CUDA_CHECK(cudaGetLastError()); }

}  // namespace

void rmsnorm_forward(cudaStream_t s, View out, float* rstd, CView inp, CView w, int N, int C, float eps) {
  const DType act = activation_dtype("rmsnorm_forward", out, inp);
  TZ_CHECK(N >= 0 && C > 0, "rmsnorm_forward needs N >= 0 rows and C > 0 channels, got ", N, " x ", C);
  with_activation_type(act, "rmsnorm_forward", [&](auto* atype) {
    using T = pointee_t<decltype(atype)>;
    with_param_type(w.dtype, "rmsnorm weights", [&](auto* ptype) {
      using P = pointee_t<decltype(ptype)>;
      if (N == 0) return;
      rmsnorm_forward_kernel<<<unsigned(N), kRowThreads, 0, s>>>(static_cast<T*>(out.ptr), rstd,
                                                                 static_cast<const T*>(inp.ptr),
                                                                 static_cast<const P*>(w.ptr), C, eps);
      check_launch();
    });
  });
}

void rmsnorm_backward(cudaStream_t s, View dinp, float* dw, CView dout, CView inp, CView w, const float* rstd,
                      int N, int C) {
  const DType act = activation_dtype("rmsnorm_backward", dinp, dout, inp);
  TZ_CHECK(N >= 0 && C > 0, "rmsnorm_backward needs N >= 0 rows and C > 0 channels, got ", N, " x ", C);
  with_activation_type(act, "rmsnorm_backward", [&](auto* atype) {
    using T = pointee_t<decltype(atype)>;
    const T* d = static_cast<const T*>(dout.ptr);
    const T* x = static_cast<const T*>(inp.ptr);
    with_param_type(w.dtype, "rmsnorm weights", [&](auto* ptype) {
      using P = pointee_t<decltype(ptype)>;
      if (N == 0) return;
      rmsnorm_backward_dinp_kernel<<<unsigned(N), kRowThreads, 0, s>>>(static_cast<T*>(dinp.ptr), d, x,
                                                                       static_cast<const P*>(w.ptr), rstd, C);
      check_launch();
    });
    if (N == 0) return;
    const unsigned tiles = unsigned((C + kColTile - 1) / kColTile);
    rmsnorm_backward_dw_kernel<<<tiles, dim3(kColTile, kColTile), 0, s>>>(dw, d, x, rstd, N, C);
    check_launch();
  });
}

void rope(cudaStream_t s, View x, const float* table, int N, int T, int heads, int hd, int stride,
          bool inverse) {
  TZ_CHECK(N >= 0 && T > 0 && heads >= 0 && hd > 0 && hd % 2 == 0,
           "rope needs N >= 0, T > 0, heads >= 0 and an ", "even head size, got N=", N, " T=", T,
           " heads=", heads, " hd=", hd);
  TZ_CHECK(std::size_t(heads) * hd <= std::size_t(stride), "rope: ", heads, " heads of ", hd,
           " do not fit in rows of ", stride, " elements");
  const std::size_t pairs = std::size_t(N) * heads * (hd / 2);
  with_activation_type(x.dtype, "rope", [&](auto* type) {
    using A = pointee_t<decltype(type)>;
    if (pairs == 0) return;
    rope_kernel<<<grid_blocks(pairs), kThreads, 0, s>>>(static_cast<A*>(x.ptr), table, pairs, T, heads,
                                                        hd / 2, stride, inverse);
    check_launch();
  });
}

void swiglu_forward(cudaStream_t s, View out, CView gate_up, int N, int I) {
  const DType act = activation_dtype("swiglu_forward", out, gate_up);
  TZ_CHECK(N >= 0 && I >= 0, "swiglu_forward needs N, I >= 0, got ", N, " x ", I);
  const std::size_t n = std::size_t(N) * I;
  with_activation_type(act, "swiglu_forward", [&](auto* type) {
    using T = pointee_t<decltype(type)>;
    if (n == 0) return;
    swiglu_forward_kernel<<<grid_blocks(n), kThreads, 0, s>>>(static_cast<T*>(out.ptr),
                                                              static_cast<const T*>(gate_up.ptr), n, I);
    check_launch();
  });
}

void swiglu_backward(cudaStream_t s, View dgate_up, CView gate_up, CView dout, int N, int I) {
  const DType act = activation_dtype("swiglu_backward", dgate_up, gate_up, dout);
  TZ_CHECK(N >= 0 && I >= 0, "swiglu_backward needs N, I >= 0, got ", N, " x ", I);
  const std::size_t n = std::size_t(N) * I;
  with_activation_type(act, "swiglu_backward", [&](auto* type) {
    using T = pointee_t<decltype(type)>;
    if (n == 0) return;
    swiglu_backward_kernel<<<grid_blocks(n), kThreads, 0, s>>>(static_cast<T*>(dgate_up.ptr),
                                                               static_cast<const T*>(gate_up.ptr),
                                                               static_cast<const T*>(dout.ptr), n, I);
    check_launch();
  });
}

}  // namespace tz::cuda
