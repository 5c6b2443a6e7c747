// Shared pieces of the fused attention kernels (attention_forward_kernels.cu,
// attention_backward_kernels.cu, attention_bf16_kernels.cu): the shape and its checks, the thread
// layout, tile loads into shared memory, and the small shared-memory matrix products every step is made of.
// qkv, out, dout and dqkv hold the activation type T (float, bf16 or fp16): tiles are widened to fp32 (or
// rounded to bf16 for the tensor cores) as they are loaded, and each result is rounded once to T where it
// is stored; lse and drow are fp32.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>

#include "core/backend.h"
#include "core/cuda/cuda_runtime.h"
#include "core/dtype.h"
#include "core/error.h"

namespace tz::cuda::attn {

// 256 threads seen as a 16 x 16 grid: tx = threadIdx.x % 16 picks columns, ty = threadIdx.x / 16 rows.
// A thread owns rows ty + 16 i and columns tx + 16 j of every tile it accumulates, so the 16 threads
// sharing a row are one half-warp and reduce over it with shuffles.
constexpr int kThreads = 256;
constexpr int kSide = 16;

// What every kernel needs to address one (batch, head) slice of qkv [B,T,(NH+2KVH)*hs] and out, dout
// [B,T,NH*hs] (grouped-query heads, core/backend.h's AttentionShape): query head h reads key-value head
// h / G where it lies, never a repeated copy. With KVH == NH (G == 1) these are GPT-2's [B,T,3C] offsets.
struct Dims {
  int T = 0, NH = 0, KVH = 0, G = 0, hs = 0;
  std::size_t W = 0, O = 0;  // elements per qkv row, (NH + 2 KVH) hs, and per out row, NH hs
  float scale = 0;           // 1 / sqrt(hs), computed on the host exactly as the cpu backend does
  // Columns, in a qkv row, of query head h's q and key-value head kvh's k and v.
  __host__ __device__ std::size_t q_col(int h) const { return std::size_t(h) * hs; }
  __host__ __device__ std::size_t k_col(int kvh) const { return std::size_t(NH + kvh) * hs; }
  __host__ __device__ std::size_t v_col(int kvh) const { return std::size_t(NH + KVH + kvh) * hs; }
};

// The shape's checks (every launch path runs them on the host before touching a pointer, so they hold
// without a device): positive heads, KVH dividing NH, grids within their limits.
inline void check_shape(const AttentionShape& a) {
  TZ_CHECK(a.B >= 0 && a.T >= 0 && a.NH > 0 && a.KVH > 0 && a.hd > 0, "attention: B=", a.B, " T=", a.T,
           " NH=", a.NH, " KVH=", a.KVH, " hd=", a.hd, " needs B, T >= 0 and positive heads and head size");
  TZ_CHECK(a.NH % a.KVH == 0, "attention: ", a.NH, " query heads cannot be grouped over ", a.KVH,
           " key-value heads; KVH must divide NH");
  TZ_CHECK(std::size_t(a.B) * a.NH <= 0x7fffffffu, "attention: B * NH = ", std::size_t(a.B) * a.NH,
           " is over the grid's 2^31 - 1 blocks");
  // Query and key tiles (32 rows at least) go in grid.y, at most 65535.
  TZ_CHECK(a.T <= 65535 * 32, "attention: T = ", a.T, " is over the ", 65535 * 32,
           " positions the grid covers");
}

inline Dims make_dims(const AttentionShape& a) {
  Dims dm;
  dm.T = a.T;
  dm.NH = a.NH;
  dm.KVH = a.KVH;
  dm.G = a.NH / a.KVH;
  dm.hs = a.hd;
  dm.W = std::size_t(a.qkv_width());
  dm.O = std::size_t(a.out_width());
  dm.scale = 1.0f / std::sqrt(float(a.hd));
  return dm;
}

// drow[(b * NH + h) * T + t] = sum over the head's columns of dout * out (D of backward), fixed order, in
// fp32 whatever dout's and out's (shared) type; attention_backward_kernels.cu, shared by both arithmetic
// paths.
void launch_drow(cudaStream_t s, float* drow, CView dout, CView out, int B, const Dims& dm);

// The head size the kernels are compiled for: hs rounded up to 32, 64, 128 or 256. Columns past hs are
// loaded as zeros, which add exact zeros to every product, and are never written.
inline int padded_head_size(int hs) {
  if (hs <= 32) return 32;
  if (hs <= 64) return 64;
  if (hs <= 128) return 128;
  if (hs <= 256) return 256;
  TZ_FAIL("attention: head size ", hs, " is over the 256 the cuda kernels support; use more, smaller heads");
}

// Kernels with more than the 48 KiB default of dynamic shared memory must opt in (per kernel, per
// device), so the launch path sets it every time; it is a host-side attribute, no device work.
template <typename Kernel>
void allow_shared_memory(Kernel kernel, std::size_t bytes) {
  TZ_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

// Rows [row0, row0 + ROWS) of a matrix of S (float, bf16 or fp16) with `row_stride` elements per row, its
// first hs columns (src points at column 0 of the head), widened into dst[ROWS][HSP + 1] fp32; zeros past
// row T and past column hs. The +1 pad puts consecutive rows in consecutive banks (the products read down
// columns).
template <int ROWS, int HSP, typename S>
__device__ __forceinline__ void load_tile(float* dst, const S* src, std::size_t row_stride, int row0, int T,
                                          int hs) {
  for (int idx = threadIdx.x; idx < ROWS * HSP; idx += kThreads) {
    const int r = idx / HSP, d = idx % HSP, t = row0 + r;
    dst[r * (HSP + 1) + d] = (t < T && d < hs) ? to_float(src[std::size_t(t) * row_stride + d]) : 0.0f;
  }
}

// acc[i][j] += sum_{k < K} A(ty + 16 i, k) * B(k, tx + 16 j), with A(r, k) = a[r * AR + k * AK] and
// B(k, c) = b[k * BK + c * BC], both in shared memory; fmaf in k order, so the result does not depend
// on anything but the inputs. The strides pick the form: S = Q K^T (A = Q, B = K read across rows),
// O += P V, dV += P^T dO (A = P read down columns).
template <int RM, int CN, int K, int AR, int AK, int BK, int BC>
__device__ __forceinline__ void tile_mma(float (&acc)[RM][CN], const float* a, const float* b, int ty,
                                         int tx) {
#pragma unroll 4
  for (int k = 0; k < K; ++k) {
    float av[RM], bv[CN];
#pragma unroll
    for (int i = 0; i < RM; ++i) av[i] = a[(ty + kSide * i) * AR + k * AK];
#pragma unroll
    for (int j = 0; j < CN; ++j) bv[j] = b[k * BK + (tx + kSide * j) * BC];
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
      for (int j = 0; j < CN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
  }
}

// Max and sum over the 16 threads of a half-warp (one tile row). The butterfly gives every lane the
// same bits: at each level a lane and its partner combine the same two values, and fmaxf and + are
// commutative (fmaxf drops a NaN on both sides alike; a NaN score still reaches the sum via exp).
__device__ __forceinline__ float row_max(float x) {
#pragma unroll
  for (int off = kSide / 2; off > 0; off >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, off));
  return x;
}

__device__ __forceinline__ float row_sum(float x) {
#pragma unroll
  for (int off = kSide / 2; off > 0; off >>= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
  return x;
}

// Forward's last step, the same for both arithmetic paths: this thread's query rows q0 + ty + kSide * i
// (those < T) of o divided by their softmax sums l into head h of batch b of out (columns tx + kSide * j
// below hs), each rounded once to out's type T, and each row's log-sum-exp m + log(l) saved for backward at
// lse[bh * T + row].
template <int RM, int DN, typename T>
__device__ __forceinline__ void write_output_rows(T* out, float* lse, const float (&o)[RM][DN],
                                                  const float (&m)[RM], const float (&l)[RM], int b, int h,
                                                  int bh, int q0, const Dims& dm, int ty, int tx) {
#pragma unroll
  for (int i = 0; i < RM; ++i) {
    const int r = q0 + ty + kSide * i;
    if (r >= dm.T) continue;
    const float inv = 1.0f / l[i];
    T* orow = out + (std::size_t(b) * dm.T + r) * dm.O + dm.q_col(h);
#pragma unroll
    for (int j = 0; j < DN; ++j) {
      const int d = tx + kSide * j;
      if (d < dm.hs) orow[d] = from_float<T>(o[i][j] * inv);
    }
    if (tx == 0) lse[std::size_t(bh) * dm.T + r] = m[i] + logf(l[i]);
  }
}

}  // namespace tz::cuda::attn
