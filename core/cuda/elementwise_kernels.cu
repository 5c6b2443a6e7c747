// The CUDA backend's elementwise kernels (GELU, add, axpy, fill, cast, bias, token and position
// embedding, the latter optional) over the shared TZ_HOST_DEVICE math, written in the CPU backend's order
// of operations so they give its bits, and the sums of bias_backward and encoder_backward, each output
// summed by one thread in a fixed order (no atomics, no scratch). Activations are T (float, bf16 or fp16):
// read through to_float, computed in fp32 and rounded once where stored (kernels.h).
#include "core/cuda/cast_kernels.h"
#include "core/cuda/cuda_runtime.h"
#include "core/cuda/kernels.h"
#include "core/cuda/launch_config.h"
#include "core/elementwise.h"

namespace tz::cuda {
namespace {

template <typename T>
__global__ void gelu_forward_kernel(T* out, const T* inp, std::size_t n) {
  for (std::size_t i = first_index(); i < n; i += grid_stride())
    out[i] = from_float<T>(math::gelu(to_float(inp[i])));
}

template <typename T>
__global__ void gelu_backward_kernel(T* dinp, const T* inp, const T* dout, std::size_t n) {
  for (std::size_t i = first_index(); i < n; i += grid_stride())
    dinp[i] = from_float<T>(math::gelu_grad(to_float(inp[i])) * to_float(dout[i]));
}

template <typename T>
__global__ void add_kernel(T* out, const T* a, const T* b, std::size_t n) {
  for (std::size_t i = first_index(); i < n; i += grid_stride())
    out[i] = from_float<T>(to_float(a[i]) + to_float(b[i]));
}

__global__ void axpy_kernel(float* y, float alpha, const float* x, std::size_t n) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) y[i] = y[i] + alpha * x[i];
}

template <typename T>
__global__ void fill_kernel(T* x, T value, std::size_t n) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) x[i] = value;
}

template <typename T, typename P>
__global__ void add_bias_kernel(T* out, const P* bias, std::size_t n, int cols) {
  for (std::size_t i = first_index(); i < n; i += grid_stride())
    out[i] = from_float<T>(to_float(out[i]) + to_float(bias[i % cols]));
}

// wpe null (no position table: Llama): the token's row alone.
template <typename T, typename P>
__global__ void encoder_forward_kernel(T* out, const std::int32_t* tokens, const P* wte, const P* wpe,
                                       std::size_t n, int seq_len, int C) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    const std::size_t pos = i / C;
    const std::size_t c = i % C;
    const float te = to_float(wte[std::size_t(tokens[pos]) * C + c]);
    out[i] = from_float<T>(wpe ? te + to_float(wpe[(pos % seq_len) * C + c]) : te);
  }
}

// dbias[c] += sum over rows of dout[r, c]. A block owns 32 columns (one per lane, so each row's read
// is one coalesced line); its 32 warps take every 32nd row in row order, and lane ty == 0 adds the 32
// partial sums in warp order.
constexpr int kColTile = 32;

template <typename T>
__global__ void bias_backward_kernel(float* dbias, const T* dout, int rows, int cols) {
  __shared__ float part[kColTile][kColTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int c = blockIdx.x * kColTile + tx;
  float acc = 0;
  if (c < cols)
    for (int r = ty; r < rows; r += kColTile) acc += to_float(dout[std::size_t(r) * cols + c]);
  part[ty][tx] = acc;
  __syncthreads();
  if (ty == 0 && c < cols) {
    float s = part[0][tx];
    for (int k = 1; k < kColTile; ++k) s += part[k][tx];
    dbias[c] += s;
  }
}

// dwpe[t, c] += dout[b, t, c] for b in order: one thread per (t, c), the CPU backend's order of adds.
template <typename T>
__global__ void encoder_backward_wpe_kernel(float* dwpe, const T* dout, int B, int seq_len, int C) {
  const std::size_t n = std::size_t(seq_len) * C;
  const std::size_t stride_b = n;
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    float acc = dwpe[i];
    for (int b = 0; b < B; ++b) acc = acc + to_float(dout[b * stride_b + i]);
    dwpe[i] = acc;
  }
}

// dwte[tok, c] += dout[pos, c] over the positions holding tok, in position order (the CPU backend's
// order of adds, so its bits), without atomics or scratch. A warp per (position, 32 channels): the
// warp whose position is the token's first occurrence owns the row; it finds the later occurrences 32
// tokens at a time (a ballot) and adds their rows in order, one channel a lane. The other warps find an
// earlier occurrence and leave. O(B*T) token compares a warp, cheap next to a sequential walk over
// positions (B*T dependent global round trips).
constexpr int kWteWarps = 8;

template <typename T>
__global__ void encoder_backward_wte_kernel(float* dwte, const T* dout, const std::int32_t* tokens, int BT,
                                            int C) {
  const unsigned all = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const int p = blockIdx.x * kWteWarps + (threadIdx.x >> 5);
  if (p >= BT) return;  // the same for the whole warp
  const std::int32_t tok = tokens[p];
  for (int w = 0; w < p; w += 32) {
    const int q = w + lane;
    if (__any_sync(all, q < p && tokens[q] == tok)) return;  // not the first occurrence
  }
  const int c = blockIdx.y * 32 + lane;
  const bool in = c < C;
  float* row = dwte + std::size_t(tok) * C;
  float acc = in ? row[c] : 0.0f;
  for (int w = p; w < BT; w += 32) {
    const int q = w + lane;
    unsigned match = __ballot_sync(all, q < BT && tokens[q] == tok);
    while (match) {
      const int k = __ffs(match) - 1;
      match &= match - 1;
      if (in) acc = acc + to_float(dout[std::size_t(w + k) * C + c]);
    }
  }
  if (in) row[c] = acc;
}

void check_launch() { TZ_CUDA_CHECK(cudaGetLastError()); }

}  // namespace

void gelu_forward(cudaStream_t s, View out, CView inp, std::size_t n) {
  with_activation_type(activation_dtype("gelu_forward", out, inp), "gelu_forward", [&](auto* type) {
    using T = pointee_t<decltype(type)>;
    if (n == 0) return;
    gelu_forward_kernel<<<grid_blocks(n), kThreads, 0, s>>>(static_cast<T*>(out.ptr),
                                                            static_cast<const T*>(inp.ptr), n);
    check_launch();
  });
}

void gelu_backward(cudaStream_t s, View dinp, CView inp, CView dout, std::size_t n) {
  with_activation_type(activation_dtype("gelu_backward", dinp, inp, dout), "gelu_backward", [&](auto* type) {
    using T = pointee_t<decltype(type)>;
    if (n == 0) return;
    gelu_backward_kernel<<<grid_blocks(n), kThreads, 0, s>>>(
        static_cast<T*>(dinp.ptr), static_cast<const T*>(inp.ptr), static_cast<const T*>(dout.ptr), n);
    check_launch();
  });
}

void add(cudaStream_t s, View out, CView a, CView b, std::size_t n) {
  with_activation_type(activation_dtype("add", out, a, b), "add", [&](auto* type) {
    using T = pointee_t<decltype(type)>;
    if (n == 0) return;
    add_kernel<<<grid_blocks(n), kThreads, 0, s>>>(static_cast<T*>(out.ptr), static_cast<const T*>(a.ptr),
                                                   static_cast<const T*>(b.ptr), n);
    check_launch();
  });
}

void axpy(cudaStream_t s, float* y, float alpha, const float* x, std::size_t n) {
  if (n == 0) return;
  axpy_kernel<<<grid_blocks(n), kThreads, 0, s>>>(y, alpha, x, n);
  check_launch();
}

void fill(cudaStream_t s, View x, float value, std::size_t n) {
  with_activation_type(x.dtype, "fill", [&](auto* type) {
    using T = pointee_t<decltype(type)>;
    if (n == 0) return;
    fill_kernel<<<grid_blocks(n), kThreads, 0, s>>>(static_cast<T*>(x.ptr), from_float<T>(value), n);
    check_launch();
  });
}

void cast(cudaStream_t s, void* dst, DType dst_type, const void* src, DType src_type, std::size_t n) {
  cast_any(dst, dst_type, src, src_type, n, s);
}

void add_bias(cudaStream_t s, View out, CView bias, int rows, int cols) {
  TZ_CHECK(rows >= 0 && cols >= 0, "add_bias needs rows, cols >= 0, got ", rows, " x ", cols);
  const std::size_t n = std::size_t(rows) * cols;
  with_activation_type(out.dtype, "add_bias", [&](auto* atype) {
    using T = pointee_t<decltype(atype)>;
    with_param_type(bias.dtype, "a bias", [&](auto* ptype) {
      using P = pointee_t<decltype(ptype)>;
      if (n == 0) return;
      add_bias_kernel<<<grid_blocks(n), kThreads, 0, s>>>(static_cast<T*>(out.ptr),
                                                          static_cast<const P*>(bias.ptr), n, cols);
      check_launch();
    });
  });
}

void bias_backward(cudaStream_t s, float* dbias, CView dout, int rows, int cols) {
  TZ_CHECK(rows >= 0 && cols >= 0, "bias_backward needs rows, cols >= 0, got ", rows, " x ", cols);
  with_activation_type(dout.dtype, "bias_backward", [&](auto* type) {
    using T = pointee_t<decltype(type)>;
    if (cols == 0) return;
    const unsigned tiles = unsigned((cols + kColTile - 1) / kColTile);
    bias_backward_kernel<<<tiles, dim3(kColTile, kColTile), 0, s>>>(dbias, static_cast<const T*>(dout.ptr),
                                                                    rows, cols);
    check_launch();
  });
}

void encoder_forward(cudaStream_t s, View out, const std::int32_t* tokens, CView wte, CView wpe, int B, int T,
                     int C) {
  TZ_CHECK(!wpe.ptr || wte.dtype == wpe.dtype, "wte and wpe must share a dtype, got ", dtype_name(wte.dtype),
           " and ", dtype_name(wpe.dtype));
  TZ_CHECK(B >= 0 && T > 0 && C > 0, "encoder_forward needs B >= 0, T > 0, C > 0, got ", B, ", ", T, ", ", C);
  const std::size_t n = std::size_t(B) * T * C;
  with_activation_type(out.dtype, "encoder_forward", [&](auto* atype) {
    using A = pointee_t<decltype(atype)>;
    with_param_type(wte.dtype, "embeddings", [&](auto* ptype) {
      using P = pointee_t<decltype(ptype)>;
      if (n == 0) return;
      encoder_forward_kernel<<<grid_blocks(n), kThreads, 0, s>>>(static_cast<A*>(out.ptr), tokens,
                                                                 static_cast<const P*>(wte.ptr),
                                                                 static_cast<const P*>(wpe.ptr), n, T, C);
      check_launch();
    });
  });
}

void encoder_backward(cudaStream_t s, float* dwte, float* dwpe, CView dout, const std::int32_t* tokens, int B,
                      int T, int C) {
  TZ_CHECK(B >= 0 && T > 0 && C > 0, "encoder_backward needs B >= 0, T > 0, C > 0, got ", B, ", ", T, ", ",
           C);
  with_activation_type(dout.dtype, "encoder_backward", [&](auto* type) {
    using A = pointee_t<decltype(type)>;
    if (B == 0) return;
    const A* d = static_cast<const A*>(dout.ptr);
    if (dwpe) {  // null: no position table (Llama)
      const std::size_t n = std::size_t(T) * C;
      encoder_backward_wpe_kernel<<<grid_blocks(n), kThreads, 0, s>>>(dwpe, d, B, T, C);
      check_launch();
    }
    const dim3 wte_grid(unsigned((B * T + kWteWarps - 1) / kWteWarps), unsigned((C + 31) / 32));
    encoder_backward_wte_kernel<<<wte_grid, kWteWarps * 32, 0, s>>>(dwte, d, tokens, B * T, C);
    check_launch();
  });
}

}  // namespace tz::cuda
