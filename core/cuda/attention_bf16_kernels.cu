// Fused causal attention on tensor cores (AttentionMath::bf16_tensor_cores): the fp32 path's tiles and
// loops (attention_forward_kernels.cu, attention_backward_kernels.cu) with every tile product done by
// nvcuda::wmma on bf16 operands, fp32 accumulation. The softmax, lse, D and the masks stay in fp32 on
// SIMT threads, which read the products' fp32 results back from shared memory. Grouped-query heads as
// there: a dK/dV block loops over its key-value head's query heads in order. Still no atomics. qkv, out,
// dout and dqkv are the activation type Act: bf16 ones go into the tiles as they are (no rounding, no
// conversion pass), fp32 and fp16 ones are rounded to bf16 as they are loaded; out and dqkv are rounded
// once to Act from the fp32 results.
#include <cuda_bf16.h>
#include <mma.h>

#include <cmath>
#include <type_traits>

#include "core/cuda/attention_math.h"
#include "core/cuda/attention_tiles.cuh"
#include "core/cuda/launch_config.h"
#include "core/elementwise.h"

namespace tz::cuda {
namespace {

namespace wmma = nvcuda::wmma;
using attn::kSide;
using attn::kThreads;
using bf16_t = __nv_bfloat16;
using Acc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

constexpr int kTile = 64;  // query rows and key rows per tile
constexpr int kRM = kTile / kSide;

// Row strides (elements): wmma wants multiples of 8 (bf16) or 4 (fp32) and 32-byte aligned fragment
// starts; the pads shift consecutive rows across banks. Every region's size is a multiple of 128 bytes.
template <int HSP>
struct Layout {
  static constexpr int LDH = HSP + 8;    // bf16 q, k, v, dout tiles [64][LDH]
  static constexpr int LDP = kTile + 8;  // bf16 P, dS tiles [64][LDP]
  static constexpr int LDF = kTile + 4;  // fp32 S, dP tiles [64][LDF]
  static constexpr int LDO = HSP + 4;    // fp32 staged output tiles [64][LDO]
  static constexpr std::size_t H = std::size_t(kTile) * LDH * 2, P = std::size_t(kTile) * LDP * 2,
                               F = std::size_t(kTile) * LDF * 4, O = std::size_t(kTile) * LDO * 4;
  static_assert(H % 128 == 0 && P % 128 == 0 && F % 128 == 0 && O % 128 == 0, "regions stay aligned");
  static_assert(2 * H >= O, "two bf16 tiles hold one staged fp32 output tile");
  static constexpr std::size_t forward_bytes = 3 * H + F + P + O;
  static constexpr std::size_t backward_bytes = 4 * H + 2 * F + 2 * P + 2 * kTile * 4;
};

// An activation element as a tensor-core operand: bf16 bits as they are, fp32 rounded to nearest even,
// fp16 widened (exactly) and then rounded.
__device__ __forceinline__ bf16_t operand(float x) { return __float2bfloat16_rn(x); }
__device__ __forceinline__ bf16_t operand(bf16 x) { return __ushort_as_bfloat16(x.bits); }
__device__ __forceinline__ bf16_t operand(fp16 x) { return __float2bfloat16_rn(fp16_to_float(x)); }

// Rows [row0, row0 + 64), columns [0, hs) of a row-major matrix of Act, as bf16 (zeros past T, hs).
template <int HSP, typename Act>
__device__ __forceinline__ void load_tile_bf16(bf16_t* dst, const Act* src, std::size_t row_stride, int row0,
                                               int T, int hs) {
  const bf16_t zero = __float2bfloat16_rn(0.0f);
  for (int idx = threadIdx.x; idx < kTile * HSP; idx += kThreads) {
    const int r = idx / HSP, d = idx % HSP, t = row0 + r;
    dst[r * Layout<HSP>::LDH + d] = (t < T && d < hs) ? operand(src[std::size_t(t) * row_stride + d]) : zero;
  }
}

// Element (i, j) of a logical matrix stored row-major (p[i * ld + j]) or column-major (p[j * ld + i]);
// the start of the 16 x 16 block (bi, bj).
template <typename L>
__device__ __forceinline__ const bf16_t* block(const bf16_t* p, int ld, int bi, int bj) {
  if constexpr (std::is_same_v<L, wmma::row_major>)
    return p + (bi * 16) * ld + bj * 16;
  else
    return p + (bj * 16) * ld + bi * 16;
}

// acc[f] += A[64][K] B[K][N] over this warp's N / 32 output blocks: block w * N/32 + f of the
// 4 x N/16 grid, row-major. 8 warps cover the 64 x N result.
template <int N, int K, typename AL, typename BL>
__device__ __forceinline__ void warp_mma(Acc (&acc)[N / 32], const bf16_t* a, int lda, const bf16_t* b,
                                         int ldb) {
  const int warp = threadIdx.x / 32;
#pragma unroll
  for (int f = 0; f < N / 32; ++f) {
    const int idx = warp * (N / 32) + f, bm = idx / (N / 16), bn = idx % (N / 16);
#pragma unroll
    for (int kk = 0; kk < K / 16; ++kk) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16_t, AL> fa;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16_t, BL> fb;
      wmma::load_matrix_sync(fa, block<AL>(a, lda, bm, kk), lda);
      wmma::load_matrix_sync(fb, block<BL>(b, ldb, kk, bn), ldb);
      wmma::mma_sync(acc[f], fa, fb, acc[f]);
    }
  }
}

template <int N>
__device__ __forceinline__ void warp_store(float* c, int ldc, const Acc (&acc)[N / 32]) {
  const int warp = threadIdx.x / 32;
#pragma unroll
  for (int f = 0; f < N / 32; ++f) {
    const int idx = warp * (N / 32) + f, bm = idx / (N / 16), bn = idx % (N / 16);
    wmma::store_matrix_sync(c + (bm * 16) * ldc + bn * 16, acc[f], ldc, wmma::mem_row_major);
  }
}

template <int N>
__device__ __forceinline__ void zero(Acc (&acc)[N / 32]) {
#pragma unroll
  for (int f = 0; f < N / 32; ++f) wmma::fill_fragment(acc[f], 0.0f);
}

// c[64][LDF] = A B^T for two [64][LDH] bf16 tiles (S = Q K^T, dP = dO V^T).
template <int HSP>
__device__ __forceinline__ void product_nt(float* c, const bf16_t* a, const bf16_t* b) {
  constexpr int LDH = Layout<HSP>::LDH;
  Acc acc[kTile / 32];
  zero<kTile>(acc);
  warp_mma<kTile, HSP, wmma::row_major, wmma::col_major>(acc, a, LDH, b, LDH);
  warp_store<kTile>(c, Layout<HSP>::LDF, acc);
}

// A staged fp32 [64][LDO] tile (rows ty + 16 i, columns tx + 16 j of this thread) times mul, rounded to Act,
// to rows row0.. of a global matrix with row_stride elements per row, columns < hs and rows < T only.
template <int HSP, typename Act>
__device__ __forceinline__ void write_staged(Act* dst, std::size_t row_stride, const float* stage, int row0,
                                             int T, int hs, float mul, int ty, int tx) {
#pragma unroll
  for (int i = 0; i < kRM; ++i) {
    const int r = row0 + ty + kSide * i;
    if (r >= T) continue;
#pragma unroll
    for (int j = 0; j < HSP / kSide; ++j) {
      const int d = tx + kSide * j;
      if (d < hs)
        dst[std::size_t(r) * row_stride + d] =
            from_float<Act>(stage[(ty + kSide * i) * Layout<HSP>::LDO + d] * mul);
    }
  }
}

template <typename Act, int HSP>
__global__ void __launch_bounds__(kThreads)
    attention_forward_bf16_kernel(Act* out, float* lse, const Act* qkv, attn::Dims dm) {
  using L = Layout<HSP>;
  constexpr int DN = HSP / kSide, CN = kTile / kSide;
  extern __shared__ __align__(128) unsigned char smem[];
  bf16_t* sq = reinterpret_cast<bf16_t*>(smem);
  bf16_t* sk = reinterpret_cast<bf16_t*>(smem + L::H);
  bf16_t* sv = reinterpret_cast<bf16_t*>(smem + 2 * L::H);
  float* ss = reinterpret_cast<float*>(smem + 3 * L::H);                // scores
  bf16_t* sp = reinterpret_cast<bf16_t*>(smem + 3 * L::H + L::F);       // probabilities
  float* so = reinterpret_cast<float*>(smem + 3 * L::H + L::F + L::P);  // this tile's P V

  const int T = dm.T, hs = dm.hs;
  const int bh = blockIdx.x, b = bh / dm.NH, h = bh % dm.NH;
  const int q0 = (gridDim.y - 1 - blockIdx.y) * kTile;
  const int tx = threadIdx.x % kSide, ty = threadIdx.x / kSide;
  const std::size_t W = dm.W;
  const Act* rows = qkv + std::size_t(b) * T * W;
  const Act* kbase = rows + dm.k_col(h / dm.G);
  const Act* vbase = rows + dm.v_col(h / dm.G);

  load_tile_bf16<HSP>(sq, rows + dm.q_col(h), W, q0, T, hs);
  float o[kRM][DN] = {};
  float m[kRM], l[kRM];
#pragma unroll
  for (int i = 0; i < kRM; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
  }
  const int last_key = min(q0 + kTile, T) - 1;
  for (int k0 = 0; k0 <= last_key; k0 += kTile) {
    // No barrier first: the previous tile read sk, sv, ss and sp before its last barrier, and reads so
    // only after it, while so is next written two barriers on.
    load_tile_bf16<HSP>(sk, kbase, W, k0, T, hs);
    load_tile_bf16<HSP>(sv, vbase, W, k0, T, hs);
    __syncthreads();
    product_nt<HSP>(ss, sq, sk);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kRM; ++i) {
      const int rl = ty + kSide * i, r = q0 + rl;
      float s[CN];
      float mx = m[i];
#pragma unroll
      for (int j = 0; j < CN; ++j) {
        const int c = k0 + tx + kSide * j;
        s[j] = (c <= r && c < T) ? ss[rl * L::LDF + tx + kSide * j] * dm.scale : -INFINITY;
        mx = fmaxf(mx, s[j]);
      }
      mx = attn::row_max(mx);
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < CN; ++j) {
        const int c = k0 + tx + kSide * j;
        const float p = (c <= r && c < T) ? math::exp_f(s[j] - mx) : 0.0f;
        sp[rl * L::LDP + tx + kSide * j] = __float2bfloat16_rn(p);
        sum += p;
      }
      sum = attn::row_sum(sum);
      const float alpha = m[i] == -INFINITY ? 0.0f : math::exp_f(m[i] - mx);
      l[i] = l[i] * alpha + sum;
      m[i] = mx;
#pragma unroll
      for (int j = 0; j < DN; ++j) o[i][j] *= alpha;
    }
    __syncthreads();  // sp complete: the warps' product blocks span other warps' rows
    {
      Acc acc[HSP / 32];
      zero<HSP>(acc);
      warp_mma<HSP, kTile, wmma::row_major, wmma::row_major>(acc, sp, L::LDP, sv, L::LDH);
      warp_store<HSP>(so, L::LDO, acc);
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kRM; ++i)
#pragma unroll
      for (int j = 0; j < DN; ++j) o[i][j] += so[(ty + kSide * i) * L::LDO + tx + kSide * j];
  }

  attn::write_output_rows(out, lse, o, m, l, b, h, bh, q0, dm, ty, tx);
}

// The backward kernels' shared memory: four bf16 [64][LDH] tiles (k, v, q, dout in the dK/dV kernel;
// q, dout, k, v in the dQ one), S and dP in fp32, P and dS in bf16, lse and D.
template <int HSP>
struct BackwardSmem {
  bf16_t *t0, *t1, *t2, *t3, *sp, *sds;
  float *ss, *sdp, *slse, *sd;
  __device__ explicit BackwardSmem(unsigned char* smem) {
    using L = Layout<HSP>;
    t0 = reinterpret_cast<bf16_t*>(smem);
    t1 = reinterpret_cast<bf16_t*>(smem + L::H);
    t2 = reinterpret_cast<bf16_t*>(smem + 2 * L::H);
    t3 = reinterpret_cast<bf16_t*>(smem + 3 * L::H);
    ss = reinterpret_cast<float*>(smem + 4 * L::H);
    sdp = reinterpret_cast<float*>(smem + 4 * L::H + L::F);
    sp = reinterpret_cast<bf16_t*>(smem + 4 * L::H + 2 * L::F);
    sds = reinterpret_cast<bf16_t*>(smem + 4 * L::H + 2 * L::F + L::P);
    slse = reinterpret_cast<float*>(smem + 4 * L::H + 2 * L::F + 2 * L::P);
    sd = slse + kTile;
  }
};

// From ss = Q K^T and sdp = dO V^T (fp32): P = exp(scale s - lse) where key <= query < T, else 0, and
// dS = P (dP - D), both rounded to bf16 into sp (when given) and sds.
template <int HSP>
__device__ __forceinline__ void probabilities_and_grads_bf16(const BackwardSmem<HSP>& sm, bool keep_p, int q0,
                                                             int k0, const attn::Dims& dm, int ty, int tx) {
  using L = Layout<HSP>;
#pragma unroll
  for (int i = 0; i < kRM; ++i) {
    const int rl = ty + kSide * i, r = q0 + rl;
#pragma unroll
    for (int j = 0; j < kTile / kSide; ++j) {
      const int cl = tx + kSide * j, c = k0 + cl;
      const float p =
          (c <= r && r < dm.T) ? math::exp_f(sm.ss[rl * L::LDF + cl] * dm.scale - sm.slse[rl]) : 0.0f;
      if (keep_p) sm.sp[rl * L::LDP + cl] = __float2bfloat16_rn(p);
      sm.sds[rl * L::LDP + cl] = __float2bfloat16_rn(p * (sm.sdp[rl * L::LDF + cl] - sm.sd[rl]));
    }
  }
}

__device__ __forceinline__ void load_row_stats_bf16(float* slse, float* sd, const float* lse,
                                                    const float* drow, int q0, int T) {
  for (int idx = threadIdx.x; idx < kTile; idx += kThreads) {
    const int t = q0 + idx;
    slse[idx] = t < T ? lse[t] : 0.0f;
    sd[idx] = t < T ? drow[t] : 0.0f;
  }
}

// grid: (B * KVH, key tiles). dK and dV accumulate in fragments across the G query heads of the key-value
// head, in order, and for each across the query tiles seeing the keys.
template <typename Act, int HSP>
__global__ void __launch_bounds__(kThreads)
    attention_dkv_bf16_kernel(Act* dqkv, const Act* dout, const Act* qkv, const float* lse, const float* drow,
                              attn::Dims dm) {
  using L = Layout<HSP>;
  extern __shared__ __align__(128) unsigned char smem[];
  const BackwardSmem<HSP> sm(smem);
  bf16_t *sk = sm.t0, *sv = sm.t1, *sq = sm.t2, *sdo = sm.t3;

  const int T = dm.T, hs = dm.hs;
  const int bkv = blockIdx.x, b = bkv / dm.KVH, kvh = bkv % dm.KVH;
  const int k0 = blockIdx.y * kTile;
  const int tx = threadIdx.x % kSide, ty = threadIdx.x / kSide;
  const std::size_t W = dm.W;
  const Act* rows = qkv + std::size_t(b) * T * W;
  const Act* drows = dout + std::size_t(b) * T * dm.O;

  load_tile_bf16<HSP>(sk, rows + dm.k_col(kvh), W, k0, T, hs);
  load_tile_bf16<HSP>(sv, rows + dm.v_col(kvh), W, k0, T, hs);
  Acc dk[HSP / 32], dv[HSP / 32];
  zero<HSP>(dk);
  zero<HSP>(dv);
  for (int h = kvh * dm.G; h < (kvh + 1) * dm.G; ++h) {
    const std::size_t bh = std::size_t(b) * dm.NH + h;
    for (int q0 = k0; q0 < T; q0 += kTile) {
      __syncthreads();  // the previous tile's reads of sq, sdo, sp, sds, slse, sd are done
      load_tile_bf16<HSP>(sq, rows + dm.q_col(h), W, q0, T, hs);
      load_tile_bf16<HSP>(sdo, drows + dm.q_col(h), dm.O, q0, T, hs);
      load_row_stats_bf16(sm.slse, sm.sd, lse + bh * T, drow + bh * T, q0, T);
      __syncthreads();
      product_nt<HSP>(sm.ss, sq, sk);
      product_nt<HSP>(sm.sdp, sdo, sv);
      __syncthreads();
      probabilities_and_grads_bf16<HSP>(sm, true, q0, k0, dm, ty, tx);
      __syncthreads();
      // A(key, query) = P[query][key]: P read column-major.
      warp_mma<HSP, kTile, wmma::col_major, wmma::row_major>(dv, sm.sp, L::LDP, sdo, L::LDH);  // dV += P^T dO
      warp_mma<HSP, kTile, wmma::col_major, wmma::row_major>(dk, sm.sds, L::LDP, sq, L::LDH);  // dK += dS^T Q
    }
  }

  // Stage through the q and dout tiles (free now) to write only rows < T and columns < hs.
  float* stage = reinterpret_cast<float*>(sq);
  Act* grad = dqkv + std::size_t(b) * T * W;
  __syncthreads();
  warp_store<HSP>(stage, L::LDO, dk);
  __syncthreads();
  write_staged<HSP>(grad + dm.k_col(kvh), W, stage, k0, T, hs, dm.scale, ty, tx);
  __syncthreads();
  warp_store<HSP>(stage, L::LDO, dv);
  __syncthreads();
  write_staged<HSP>(grad + dm.v_col(kvh), W, stage, k0, T, hs, 1.0f, ty, tx);
}

// grid: (B * NH, query tiles), the last first. dQ accumulates in fragments across the key tiles.
template <typename Act, int HSP>
__global__ void __launch_bounds__(kThreads)
    attention_dq_bf16_kernel(Act* dqkv, const Act* dout, const Act* qkv, const float* lse, const float* drow,
                             attn::Dims dm) {
  using L = Layout<HSP>;
  extern __shared__ __align__(128) unsigned char smem[];
  const BackwardSmem<HSP> sm(smem);
  bf16_t *sq = sm.t0, *sdo = sm.t1, *sk = sm.t2, *sv = sm.t3;

  const int T = dm.T, hs = dm.hs;
  const int bh = blockIdx.x, b = bh / dm.NH, h = bh % dm.NH;
  const int q0 = (gridDim.y - 1 - blockIdx.y) * kTile;
  const int tx = threadIdx.x % kSide, ty = threadIdx.x / kSide;
  const std::size_t W = dm.W;
  const Act* rows = qkv + std::size_t(b) * T * W;
  const Act* kbase = rows + dm.k_col(h / dm.G);
  const Act* vbase = rows + dm.v_col(h / dm.G);

  load_tile_bf16<HSP>(sq, rows + dm.q_col(h), W, q0, T, hs);
  load_tile_bf16<HSP>(sdo, dout + std::size_t(b) * T * dm.O + dm.q_col(h), dm.O, q0, T, hs);
  load_row_stats_bf16(sm.slse, sm.sd, lse + std::size_t(bh) * T, drow + std::size_t(bh) * T, q0, T);
  Acc dq[HSP / 32];
  zero<HSP>(dq);
  const int last_key = min(q0 + kTile, T) - 1;
  for (int k0 = 0; k0 <= last_key; k0 += kTile) {
    __syncthreads();  // the previous tile's reads of sk, sv, sds are done
    load_tile_bf16<HSP>(sk, kbase, W, k0, T, hs);
    load_tile_bf16<HSP>(sv, vbase, W, k0, T, hs);
    __syncthreads();
    product_nt<HSP>(sm.ss, sq, sk);
    product_nt<HSP>(sm.sdp, sdo, sv);
    __syncthreads();
    probabilities_and_grads_bf16<HSP>(sm, false, q0, k0, dm, ty, tx);
    __syncthreads();
    warp_mma<HSP, kTile, wmma::row_major, wmma::row_major>(dq, sm.sds, L::LDP, sk, L::LDH);  // dQ += dS K
  }

  float* stage = reinterpret_cast<float*>(sk);  // the k and v tiles, free after the last product
  __syncthreads();
  warp_store<HSP>(stage, L::LDO, dq);
  __syncthreads();
  write_staged<HSP>(dqkv + std::size_t(b) * T * W + dm.q_col(h), W, stage, q0, T, hs, dm.scale, ty, tx);
}

template <typename Act, int HSP>
void launch_forward_bf16(cudaStream_t s, Act* out, float* lse, const Act* qkv, int B, const attn::Dims& dm) {
  const std::size_t smem = Layout<HSP>::forward_bytes;
  const auto kernel = attention_forward_bf16_kernel<Act, HSP>;
  attn::allow_shared_memory(kernel, smem);
  kernel<<<dim3(unsigned(B * dm.NH), unsigned((dm.T + kTile - 1) / kTile)), kThreads, smem, s>>>(out, lse,
                                                                                                 qkv, dm);
  TZ_CUDA_CHECK(cudaGetLastError());
}

template <typename Act, int HSP>
void launch_backward_bf16(cudaStream_t s, Act* dqkv, const float* drow, const Act* dout, const Act* qkv,
                          const float* lse, int B, const attn::Dims& dm) {
  const std::size_t smem = Layout<HSP>::backward_bytes;
  const unsigned tiles = unsigned((dm.T + kTile - 1) / kTile);
  const auto dkv = attention_dkv_bf16_kernel<Act, HSP>;
  attn::allow_shared_memory(dkv, smem);
  dkv<<<dim3(unsigned(B * dm.KVH), tiles), kThreads, smem, s>>>(dqkv, dout, qkv, lse, drow, dm);
  TZ_CUDA_CHECK(cudaGetLastError());
  const auto dq = attention_dq_bf16_kernel<Act, HSP>;
  attn::allow_shared_memory(dq, smem);
  dq<<<dim3(unsigned(B * dm.NH), tiles), kThreads, smem, s>>>(dqkv, dout, qkv, lse, drow, dm);
  TZ_CUDA_CHECK(cudaGetLastError());
}

// The tensor-core kernels are compiled for head sizes 64 and 128 (smaller ones are padded to 64).
int bf16_head_size(int hs) {
  TZ_CHECK(hs <= kMaxBf16HeadSize, "attention: head size ", hs, " is over the ", kMaxBf16HeadSize,
           " the bf16 tensor-core kernels support; use AttentionMath::fp32_simt");
  return hs <= 64 ? 64 : 128;
}

}  // namespace

void attention_forward(cudaStream_t s, View out, float* lse, CView qkv, const AttentionShape& a,
                       AttentionMath math) {
  if (math == AttentionMath::fp32_simt) return attention_forward(s, out, lse, qkv, a);
  const DType act = activation_dtype("attention_forward", out, qkv);
  attn::check_shape(a);
  const int hsp = bf16_head_size(a.hd);
  with_activation_type(act, "attention_forward", [&](auto* type) {
    using Act = pointee_t<decltype(type)>;
    if (a.B == 0 || a.T == 0) return;
    const attn::Dims dm = attn::make_dims(a);
    Act* o = static_cast<Act*>(out.ptr);
    const Act* x = static_cast<const Act*>(qkv.ptr);
    if (hsp == 64) return launch_forward_bf16<Act, 64>(s, o, lse, x, a.B, dm);
    launch_forward_bf16<Act, 128>(s, o, lse, x, a.B, dm);
  });
}

void attention_backward(cudaStream_t s, View dqkv, float* drow, CView dout, CView qkv, CView out,
                        const float* lse, const AttentionShape& a, AttentionMath math) {
  if (math == AttentionMath::fp32_simt) return attention_backward(s, dqkv, drow, dout, qkv, out, lse, a);
  const DType act = activation_dtype("attention_backward", dqkv, dout, qkv, out);
  attn::check_shape(a);
  const int hsp = bf16_head_size(a.hd);
  with_activation_type(act, "attention_backward", [&](auto* type) {
    using Act = pointee_t<decltype(type)>;
    if (a.B == 0 || a.T == 0) return;
    const int B = a.B;
    const attn::Dims dm = attn::make_dims(a);
    attn::launch_drow(s, drow, dout, out, B, dm);
    Act* dx = static_cast<Act*>(dqkv.ptr);
    const Act* d = static_cast<const Act*>(dout.ptr);
    const Act* x = static_cast<const Act*>(qkv.ptr);
    if (hsp == 64) return launch_backward_bf16<Act, 64>(s, dx, drow, d, x, lse, B, dm);
    launch_backward_bf16<Act, 128>(s, dx, drow, d, x, lse, B, dm);
  });
}

}  // namespace tz::cuda
