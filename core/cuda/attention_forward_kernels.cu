// Fused causal attention forward in fp32 (FlashAttention-2's loop on SIMT cores): one block per tile of
// queries of one (batch, query head), looping over the key tiles of its key-value head with an online
// softmax, so no [T,T] matrix ever reaches global memory. Saves each row's log-sum-exp for backward
// (attention_backward_kernels.cu). qkv and out are the activation type T, widened to fp32 in shared memory.
#include <cmath>

#include "core/cuda/attention_tiles.cuh"
#include "core/cuda/kernels.h"
#include "core/cuda/launch_config.h"
#include "core/elementwise.h"

namespace tz::cuda {
namespace {

using attn::kSide;
using attn::kThreads;

// Query rows BR and key rows BC per tile: 64 x 64 up to head size 128 (116 KiB of shared memory at
// 128), 32 x 32 at 256 so the three [rows][257] tiles stay near 100 KiB.
template <int HSP>
struct ForwardTile {
  static constexpr int BR = HSP <= 128 ? 64 : 32;
  static constexpr int BC = BR;
  static constexpr int LD = HSP + 1;  // q, k, v rows
  static constexpr int LDS = BC + 1;  // probability rows
  static constexpr std::size_t smem_floats = std::size_t(BR + 2 * BC) * LD + std::size_t(BR) * LDS;
};

// grid: (B * NH, query tiles); the last query tiles (the most keys) are launched first. Query head h
// reads the keys and values of head h / G in place.
// exp is math::exp_f, the cpu backend's, on the scaled score minus the running row max.
template <typename Act, int HSP>
__global__ void __launch_bounds__(kThreads)
    attention_forward_kernel(Act* out, float* lse, const Act* qkv, attn::Dims dm) {
  using Tile = ForwardTile<HSP>;
  constexpr int BR = Tile::BR, BC = Tile::BC, LD = Tile::LD, LDS = Tile::LDS;
  constexpr int RM = BR / kSide, CN = BC / kSide, DN = HSP / kSide;
  extern __shared__ float smem[];
  float* sq = smem;          // [BR][LD]
  float* sk = sq + BR * LD;  // [BC][LD]
  float* sv = sk + BC * LD;  // [BC][LD]
  float* sp = sv + BC * LD;  // [BR][LDS]: this key tile's unnormalised probabilities

  const int T = dm.T, hs = dm.hs;
  const int bh = blockIdx.x, b = bh / dm.NH, h = bh % dm.NH;
  const int q0 = (gridDim.y - 1 - blockIdx.y) * BR;
  const int tx = threadIdx.x % kSide, ty = threadIdx.x / kSide;
  const std::size_t W = dm.W;
  const Act* rows = qkv + std::size_t(b) * T * W;
  const Act* kbase = rows + dm.k_col(h / dm.G);
  const Act* vbase = rows + dm.v_col(h / dm.G);

  attn::load_tile<BR, HSP>(sq, rows + dm.q_col(h), W, q0, T, hs);

  float o[RM][DN] = {};
  float m[RM], l[RM];  // running max of the scaled scores and sum of exp(score - m), per owned row
#pragma unroll
  for (int i = 0; i < RM; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
  }

  // The tile's last real query sees keys up to itself; key 0 is in every row's first tile, so m is
  // finite after the first iteration.
  const int last_key = min(q0 + BR, T) - 1;
  for (int k0 = 0; k0 <= last_key; k0 += BC) {
    __syncthreads();  // the previous tile's reads of sk, sv and sp are done
    attn::load_tile<BC, HSP>(sk, kbase, W, k0, T, hs);
    attn::load_tile<BC, HSP>(sv, vbase, W, k0, T, hs);
    __syncthreads();

    float s[RM][CN] = {};
    attn::tile_mma<RM, CN, HSP, LD, 1, 1, LD>(s, sq, sk, ty, tx);

#pragma unroll
    for (int i = 0; i < RM; ++i) {
      const int r = q0 + ty + kSide * i;
      float mx = m[i];
#pragma unroll
      for (int j = 0; j < CN; ++j) {
        const int c = k0 + tx + kSide * j;
        s[i][j] = (c <= r && c < T) ? s[i][j] * dm.scale : -INFINITY;
        mx = fmaxf(mx, s[i][j]);
      }
      mx = attn::row_max(mx);
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < CN; ++j) {
        const int c = k0 + tx + kSide * j;
        // Masked keys get an exact zero (exp_f clamps, it would give 1e-38).
        const float p = (c <= r && c < T) ? math::exp_f(s[i][j] - mx) : 0.0f;
        sp[(ty + kSide * i) * LDS + tx + kSide * j] = p;
        sum += p;
      }
      sum = attn::row_sum(sum);
      const float alpha = m[i] == -INFINITY ? 0.0f : math::exp_f(m[i] - mx);
      l[i] = l[i] * alpha + sum;
      m[i] = mx;
#pragma unroll
      for (int j = 0; j < DN; ++j) o[i][j] *= alpha;
    }
    // Each half-warp reads back only the sp rows it wrote, so the warp's barrier (with its memory
    // ordering) is enough here.
    __syncwarp();
    attn::tile_mma<RM, DN, BC, LDS, 1, LD, 1>(o, sp, sv, ty, tx);  // o += P V
  }

  attn::write_output_rows(out, lse, o, m, l, b, h, bh, q0, dm, ty, tx);
}

template <typename Act, int HSP>
void launch_forward(cudaStream_t s, Act* out, float* lse, const Act* qkv, int B, const attn::Dims& dm) {
  using Tile = ForwardTile<HSP>;
  const std::size_t smem = Tile::smem_floats * sizeof(float);
  const auto kernel = attention_forward_kernel<Act, HSP>;
  attn::allow_shared_memory(kernel, smem);
  const dim3 grid(unsigned(B * dm.NH), unsigned((dm.T + Tile::BR - 1) / Tile::BR));
  kernel<<<grid, kThreads, smem, s>>>(out, lse, qkv, dm);
  TZ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void attention_forward(cudaStream_t s, View out, float* lse, CView qkv, const AttentionShape& a) {
  const DType act = activation_dtype("attention_forward", out, qkv);
  attn::check_shape(a);
  const int hsp = attn::padded_head_size(a.hd);
  with_activation_type(act, "attention_forward", [&](auto* type) {
    using T = pointee_t<decltype(type)>;
    if (a.B == 0 || a.T == 0) return;
    const int B = a.B;
    const attn::Dims dm = attn::make_dims(a);
    T* o = static_cast<T*>(out.ptr);
    const T* x = static_cast<const T*>(qkv.ptr);
    switch (hsp) {
      case 32:
        return launch_forward<T, 32>(s, o, lse, x, B, dm);
      case 64:
        return launch_forward<T, 64>(s, o, lse, x, B, dm);
      case 128:
        return launch_forward<T, 128>(s, o, lse, x, B, dm);
      default:
        return launch_forward<T, 256>(s, o, lse, x, B, dm);
    }
  });
}

}  // namespace tz::cuda
