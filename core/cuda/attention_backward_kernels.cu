// Fused causal attention backward in fp32 (FlashAttention-2's recomputation on SIMT cores), without
// float atomics so every run gives the same bits: D = rowsum(dout * out) first, then one block per key
// tile of a key-value head for dK and dV (looping over the G query heads of its group in order, and for
// each over the query tiles that see the keys) and one per query tile of a query head for dQ (looping
// over the key tiles it sees). Both recompute P = exp(scale * q.k - lse) from forward's log-sum-exp
// (exp is math::exp_f, as in forward and the cpu backend). qkv, out, dout and dqkv are the activation type
// Act, widened to fp32 in shared memory; each gradient is rounded once to Act where it is written.
#include <cmath>

#include "core/cuda/attention_tiles.cuh"
#include "core/cuda/kernels.h"
#include "core/cuda/launch_config.h"
#include "core/elementwise.h"

namespace tz::cuda {
namespace {

using attn::kSide;
using attn::kThreads;

// Query rows BR and key rows BC per tile; four [rows][HSP + 1] tiles and two [BR][BC + 1] ones in shared
// memory (166 KiB at head size 128, 140 KiB at 256 with 32 x 32 tiles).
template <int HSP>
struct BackwardTile {
  static constexpr int BR = HSP <= 128 ? 64 : 32;
  static constexpr int BC = BR;
  static constexpr int LD = HSP + 1;
  static constexpr int LDS = BC + 1;
  static constexpr std::size_t smem_floats =
      std::size_t(2 * BR + 2 * BC) * LD + std::size_t(2) * BR * LDS + std::size_t(2) * BR;
};

// drow[(b * NH + h) * T + t] = sum_d dout * out over query head h's hs columns: one warp per row, lanes
// strided over d, then a butterfly (fixed order).
template <typename Act>
__global__ void attention_drow_kernel(float* drow, const Act* dout, const Act* out, std::size_t rows,
                                      attn::Dims dm) {
  const std::size_t row = (std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;  // whole warps leave together (rows are per warp)
  const int t = int(row % dm.T);
  const std::size_t bh = row / dm.T;
  const int h = int(bh % dm.NH);
  const std::size_t b = bh / dm.NH;
  const std::size_t off = (b * dm.T + t) * dm.O + dm.q_col(h);
  float acc = 0.0f;
  for (int d = lane; d < dm.hs; d += 32) acc = fmaf(to_float(dout[off + d]), to_float(out[off + d]), acc);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) drow[row] = acc;
}

// The probabilities and their score gradients of one [BR queries][BC keys] tile into sp and sds (sp
// may be null when only dS is needed): P = exp(scale s - lse) where key <= query < T, else 0;
// dS = P (dP - D). Reads sq, sk, sdo, sv, slse, sd; the caller syncs before and after.
template <int HSP>
__device__ __forceinline__ void probabilities_and_grads(float* sp, float* sds, const float* sq,
                                                        const float* sk, const float* sdo, const float* sv,
                                                        const float* slse, const float* sd, int q0, int k0,
                                                        const attn::Dims& dm, int ty, int tx) {
  using Tile = BackwardTile<HSP>;
  constexpr int BR = Tile::BR, BC = Tile::BC, LD = Tile::LD, LDS = Tile::LDS;
  constexpr int RM = BR / kSide, CN = BC / kSide;
  float s[RM][CN] = {}, dp[RM][CN] = {};
  attn::tile_mma<RM, CN, HSP, LD, 1, 1, LD>(s, sq, sk, ty, tx);    // S = Q K^T
  attn::tile_mma<RM, CN, HSP, LD, 1, 1, LD>(dp, sdo, sv, ty, tx);  // dP = dO V^T
#pragma unroll
  for (int i = 0; i < RM; ++i) {
    const int rl = ty + kSide * i, r = q0 + rl;
#pragma unroll
    for (int j = 0; j < CN; ++j) {
      const int cl = tx + kSide * j, c = k0 + cl;
      // c <= r < T also keeps c < T; masked entries are exact zeros (exp_f clamps to 1e-38).
      const float p = (c <= r && r < dm.T) ? math::exp_f(s[i][j] * dm.scale - slse[rl]) : 0.0f;
      if (sp) sp[rl * LDS + cl] = p;
      sds[rl * LDS + cl] = p * (dp[i][j] - sd[rl]);
    }
  }
}

// lse and D of rows [q0, q0 + BR) into slse, sd (zeros past T).
template <int BR>
__device__ __forceinline__ void load_row_stats(float* slse, float* sd, const float* lse, const float* drow,
                                               int q0, int T) {
  for (int idx = threadIdx.x; idx < BR; idx += kThreads) {
    const int t = q0 + idx;
    slse[idx] = t < T ? lse[t] : 0.0f;
    sd[idx] = t < T ? drow[t] : 0.0f;
  }
}

// grid: (B * KVH, key tiles). Key tile k0 of key-value head kvh is seen by query heads kvh * G ..
// kvh * G + G - 1, each by its query tiles from the one holding query k0 to the end; dK and dV stay in
// registers across all of them (heads in order, then tiles in order: a fixed sum, no atomics) and are
// written once (dK times scale). G == 1 is the plain multi-head loop.
template <typename Act, int HSP>
__global__ void __launch_bounds__(kThreads)
    attention_dkv_kernel(Act* dqkv, const Act* dout, const Act* qkv, const float* lse, const float* drow,
                         attn::Dims dm) {
  using Tile = BackwardTile<HSP>;
  constexpr int BR = Tile::BR, BC = Tile::BC, LD = Tile::LD, LDS = Tile::LDS;
  constexpr int KM = BC / kSide, DN = HSP / kSide;
  extern __shared__ float smem[];
  float* sk = smem;              // [BC][LD]
  float* sv = sk + BC * LD;      // [BC][LD]
  float* sq = sv + BC * LD;      // [BR][LD]
  float* sdo = sq + BR * LD;     // [BR][LD]
  float* sp = sdo + BR * LD;     // [BR][LDS]
  float* sds = sp + BR * LDS;    // [BR][LDS]
  float* slse = sds + BR * LDS;  // [BR]
  float* sd = slse + BR;         // [BR]

  const int T = dm.T, hs = dm.hs;
  const int bkv = blockIdx.x, b = bkv / dm.KVH, kvh = bkv % dm.KVH;
  const int k0 = blockIdx.y * BC;
  const int tx = threadIdx.x % kSide, ty = threadIdx.x / kSide;
  const std::size_t W = dm.W;
  const Act* rows = qkv + std::size_t(b) * T * W;
  const Act* drows = dout + std::size_t(b) * T * dm.O;

  attn::load_tile<BC, HSP>(sk, rows + dm.k_col(kvh), W, k0, T, hs);
  attn::load_tile<BC, HSP>(sv, rows + dm.v_col(kvh), W, k0, T, hs);

  float dk[KM][DN] = {}, dv[KM][DN] = {};
  for (int h = kvh * dm.G; h < (kvh + 1) * dm.G; ++h) {
    const std::size_t bh = std::size_t(b) * dm.NH + h;
    for (int q0 = (k0 / BR) * BR; q0 < T; q0 += BR) {
      __syncthreads();  // the previous tile's reads of sq, sdo, sp, sds, slse, sd are done
      attn::load_tile<BR, HSP>(sq, rows + dm.q_col(h), W, q0, T, hs);
      attn::load_tile<BR, HSP>(sdo, drows + dm.q_col(h), dm.O, q0, T, hs);
      load_row_stats<BR>(slse, sd, lse + bh * T, drow + bh * T, q0, T);
      __syncthreads();
      probabilities_and_grads<HSP>(sp, sds, sq, sk, sdo, sv, slse, sd, q0, k0, dm, ty, tx);
      __syncthreads();
      // Rows of dK, dV are keys: A(c, r) = P[r][c] read down a column.
      attn::tile_mma<KM, DN, BR, 1, LDS, LD, 1>(dv, sp, sdo, ty, tx);  // dV += P^T dO
      attn::tile_mma<KM, DN, BR, 1, LDS, LD, 1>(dk, sds, sq, ty, tx);  // dK += dS^T Q
    }
  }

#pragma unroll
  for (int i = 0; i < KM; ++i) {
    const int c = k0 + ty + kSide * i;
    if (c >= T) continue;
    Act* row = dqkv + (std::size_t(b) * T + c) * W;
#pragma unroll
    for (int j = 0; j < DN; ++j) {
      const int d = tx + kSide * j;
      if (d < hs) {
        row[dm.k_col(kvh) + d] = from_float<Act>(dk[i][j] * dm.scale);
        row[dm.v_col(kvh) + d] = from_float<Act>(dv[i][j]);
      }
    }
  }
}

// grid: (B * NH, query tiles), the last (most keys) first. dQ stays in registers across the key tiles
// 0 .. the tile's last query (of key-value head h / G) and is written once, times scale.
template <typename Act, int HSP>
__global__ void __launch_bounds__(kThreads)
    attention_dq_kernel(Act* dqkv, const Act* dout, const Act* qkv, const float* lse, const float* drow,
                        attn::Dims dm) {
  using Tile = BackwardTile<HSP>;
  constexpr int BR = Tile::BR, BC = Tile::BC, LD = Tile::LD, LDS = Tile::LDS;
  constexpr int RM = BR / kSide, DN = HSP / kSide;
  extern __shared__ float smem[];
  float* sq = smem;              // [BR][LD]
  float* sdo = sq + BR * LD;     // [BR][LD]
  float* sk = sdo + BR * LD;     // [BC][LD]
  float* sv = sk + BC * LD;      // [BC][LD]
  float* sds = sv + BC * LD;     // [BR][LDS]
  float* slse = sds + BR * LDS;  // [BR]
  float* sd = slse + BR;         // [BR]

  const int T = dm.T, hs = dm.hs;
  const int bh = blockIdx.x, b = bh / dm.NH, h = bh % dm.NH;
  const int q0 = (gridDim.y - 1 - blockIdx.y) * BR;
  const int tx = threadIdx.x % kSide, ty = threadIdx.x / kSide;
  const std::size_t W = dm.W;
  const Act* rows = qkv + std::size_t(b) * T * W;
  const Act* kbase = rows + dm.k_col(h / dm.G);
  const Act* vbase = rows + dm.v_col(h / dm.G);

  attn::load_tile<BR, HSP>(sq, rows + dm.q_col(h), W, q0, T, hs);
  attn::load_tile<BR, HSP>(sdo, dout + std::size_t(b) * T * dm.O + dm.q_col(h), dm.O, q0, T, hs);
  load_row_stats<BR>(slse, sd, lse + std::size_t(bh) * T, drow + std::size_t(bh) * T, q0, T);

  float dq[RM][DN] = {};
  const int last_key = min(q0 + BR, T) - 1;
  for (int k0 = 0; k0 <= last_key; k0 += BC) {
    __syncthreads();  // the previous tile's reads of sk, sds are done
    attn::load_tile<BC, HSP>(sk, kbase, W, k0, T, hs);
    attn::load_tile<BC, HSP>(sv, vbase, W, k0, T, hs);
    __syncthreads();
    probabilities_and_grads<HSP>(nullptr, sds, sq, sk, sdo, sv, slse, sd, q0, k0, dm, ty, tx);
    __syncthreads();
    attn::tile_mma<RM, DN, BC, LDS, 1, LD, 1>(dq, sds, sk, ty, tx);  // dQ += dS K
  }

#pragma unroll
  for (int i = 0; i < RM; ++i) {
    const int r = q0 + ty + kSide * i;
    if (r >= T) continue;
    Act* row = dqkv + (std::size_t(b) * T + r) * W + dm.q_col(h);
#pragma unroll
    for (int j = 0; j < DN; ++j) {
      const int d = tx + kSide * j;
      if (d < hs) row[d] = from_float<Act>(dq[i][j] * dm.scale);
    }
  }
}

template <typename Act, int HSP>
void launch_backward(cudaStream_t s, Act* dqkv, const float* drow, const Act* dout, const Act* qkv,
                     const float* lse, int B, const attn::Dims& dm) {
  using Tile = BackwardTile<HSP>;
  const std::size_t smem = Tile::smem_floats * sizeof(float);
  const unsigned bh = unsigned(B * dm.NH), bkv = unsigned(B * dm.KVH);
  const auto dkv = attention_dkv_kernel<Act, HSP>;
  attn::allow_shared_memory(dkv, smem);
  dkv<<<dim3(bkv, unsigned((dm.T + Tile::BC - 1) / Tile::BC)), kThreads, smem, s>>>(dqkv, dout, qkv, lse,
                                                                                    drow, dm);
  TZ_CUDA_CHECK(cudaGetLastError());
  const auto dq = attention_dq_kernel<Act, HSP>;
  attn::allow_shared_memory(dq, smem);
  dq<<<dim3(bh, unsigned((dm.T + Tile::BR - 1) / Tile::BR)), kThreads, smem, s>>>(dqkv, dout, qkv, lse, drow,
                                                                                  dm);
  TZ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void attn::launch_drow(cudaStream_t s, float* drow, CView dout, CView out, int B, const Dims& dm) {
  with_activation_type(
      activation_dtype("attention_backward", dout, out), "attention_backward", [&](auto* type) {
        using Act = pointee_t<decltype(type)>;
        const std::size_t rows = std::size_t(B) * dm.NH * dm.T;
        constexpr int kRowsPerBlock = kThreads / 32;
        attention_drow_kernel<<<unsigned((rows + kRowsPerBlock - 1) / kRowsPerBlock), kThreads, 0, s>>>(
            drow, static_cast<const Act*>(dout.ptr), static_cast<const Act*>(out.ptr), rows, dm);
        TZ_CUDA_CHECK(cudaGetLastError());
      });
}

void attention_backward(cudaStream_t s, View dqkv, float* drow, CView dout, CView qkv, CView out,
                        const float* lse, const AttentionShape& a) {
  const DType act = activation_dtype("attention_backward", dqkv, dout, qkv, out);
  attn::check_shape(a);
  const int hsp = attn::padded_head_size(a.hd);
  with_activation_type(act, "attention_backward", [&](auto* type) {
    using Act = pointee_t<decltype(type)>;
    if (a.B == 0 || a.T == 0) return;
    const int B = a.B;
    const attn::Dims dm = attn::make_dims(a);
    attn::launch_drow(s, drow, dout, out, B, dm);
    // dK, dV and dQ write disjoint columns of dqkv (every column once: the q columns by their query head's
    // blocks, the k and v ones by their key-value head's), so the two kernels only need the stream's order
    // after drow.
    Act* dx = static_cast<Act*>(dqkv.ptr);
    const Act* d = static_cast<const Act*>(dout.ptr);
    const Act* x = static_cast<const Act*>(qkv.ptr);
    switch (hsp) {
      case 32:
        return launch_backward<Act, 32>(s, dx, drow, d, x, lse, B, dm);
      case 64:
        return launch_backward<Act, 64>(s, dx, drow, d, x, lse, B, dm);
      case 128:
        return launch_backward<Act, 128>(s, dx, drow, d, x, lse, B, dm);
      default:
        return launch_backward<Act, 256>(s, dx, drow, d, x, lse, B, dm);
    }
  });
}

}  // namespace tz::cuda
