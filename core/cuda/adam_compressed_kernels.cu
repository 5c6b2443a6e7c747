// The CUDA backend's AdamW on compressed states (issue 36): the CPU's definitions (core/adam_int8.h,
// core/adam_compressed.h) on the GPU, bit for bit. int8 moments: one thread block of 256 threads per
// quantization block, each thread one element: dequantized with the block's absmax, updated in fp32 by
// math::adamw_update (no FMA contraction: --fmad=false), the block's new absmax a max over the block (exact
// in any order; NaNs ignored as the CPU's running std::max ignores them), each code the largest k with
// code_thresholds[k] <= x / absmax (core/quant_map.h: the nearest code, ties to the smaller magnitude).
// bf16 moments and fp32 moments under a bf16 master: element by element. A bf16 master rounds
// stochastically with counter_bits(seed, step, element) (core/stochastic_round.h).
#include <algorithm>
#include <cmath>
#include <mutex>

#include "core/adam_compressed.h"
#include "core/blockwise_quant.h"
#include "core/cpu_adam.h"
#include "core/cuda/cuda_runtime.h"
#include "core/cuda/kernels.h"
#include "core/cuda/launch_config.h"
#include "core/elementwise.h"
#include "core/quant_map.h"
#include "core/stochastic_round.h"

namespace tz::cuda {
namespace {

static_assert(kQuantBlock == 256 && kThreads == 256, "one thread per element of a quantization block");

// The maps and their thresholds, copied to each device once.
__constant__ float c_tables[4][256];  // signed map, unsigned map, signed thresholds, unsigned thresholds

void upload_tables() {
  static std::mutex mu;
  static bool done[64] = {};
  int dev = 0;
  TZ_CUDA_CHECK(cudaGetDevice(&dev));
  TZ_CHECK(dev >= 0 && dev < 64, "GPU ", dev, ": the compressed AdamW supports devices 0 to 63");
  const std::lock_guard<std::mutex> lock(mu);
  if (done[dev]) return;
  float t[4][256];
  for (int i = 0; i < 256; ++i) {
    t[0][i] = dynamic_map(true)[std::size_t(i)];
    t[1][i] = dynamic_map(false)[std::size_t(i)];
    t[2][i] = code_thresholds(true)[std::size_t(i)];
    t[3][i] = code_thresholds(false)[std::size_t(i)];
  }
  TZ_CUDA_CHECK(cudaMemcpyToSymbol(c_tables, t, sizeof t));
  done[dev] = true;
}

struct SrArgs {
  std::uint64_t seed, step, first;  // element i's bits: counter_bits(seed, step, first + i)
};

template <bool kBf16Master>
__device__ float load_p(const void* p, std::size_t i) {
  if constexpr (kBf16Master) return bf16_to_float(static_cast<const bf16*>(p)[i]);
  else return static_cast<const float*>(p)[i];
}

template <bool kBf16Master>
__device__ void store_p(void* p, std::size_t i, float x, const SrArgs& sr) {
  if constexpr (kBf16Master) static_cast<bf16*>(p)[i] = float_to_bf16_sr(x, counter_bits(sr.seed, sr.step, sr.first + i));
  else static_cast<float*>(p)[i] = x;
}

// The largest of the block's x (x >= 0 or NaN; NaN ignored) on every thread.
__device__ float block_max(float x, float* scratch) {
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // scratch's last readers are done
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  float m = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) m = fmaxf(m, scratch[w]);
  return m;
}

// The code of x within a block of absmax `absmax` (blockwise_quant.cc's quantize_block).
__device__ std::uint8_t code_of(float x, float absmax, const float* thr, bool keep_nonzero) {
  auto nearest = [&](float y) {
    if (isnan(y)) y = 0.0f;
    int k = 0;
    for (int step = 128; step > 0; step >>= 1)
      if (k + step < 256 && thr[k + step] <= y) k += step;
    return k;
  };
  const int zero = nearest(0.0f);  // the code of 0
  int c = absmax > 0.0f ? nearest(x / absmax) : zero;
  if (keep_nonzero && c == zero && x != 0.0f) c = x > 0.0f ? zero + 1 : zero - 1;
  return std::uint8_t(c);
}

template <bool kBf16Master>
__global__ void int8_kernel(void* p, std::uint8_t* m, float* m_abs, std::uint8_t* v, float* v_abs, const float* g,
                            std::size_t n, math::AdamCoeffs c, SrArgs sr) {
  __shared__ float tables[4][256];
  __shared__ float scratch[kThreads / 32];
  const int t = threadIdx.x;
  for (int k = 0; k < 4; ++k) tables[k][t] = c_tables[k][t];
  __syncthreads();
  const std::size_t blocks = (n + kQuantBlock - 1) / kQuantBlock;
  for (std::size_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    const std::size_t i = b * kQuantBlock + std::size_t(t);
    const bool in = i < n;
    float mi = 0.0f, vi = 0.0f;
    if (in) {
      mi = tables[0][m[i]] * m_abs[b];
      vi = tables[1][v[i]] * v_abs[b];
      const float gi = g[i];
      if (isfinite(gi)) {
        float pi = load_p<kBf16Master>(p, i);
        math::adamw_update(pi, mi, vi, gi, c);
        store_p<kBf16Master>(p, i, pi, sr);
      }
    }
    const float am = block_max(fabsf(mi), scratch);  // every thread has read m_abs[b] before it
    const float av = block_max(fabsf(vi), scratch);
    if (in) {
      m[i] = code_of(mi, am, tables[2], false);
      v[i] = code_of(vi, av, tables[3], true);
    }
    if (t == 0) {
      m_abs[b] = am;
      v_abs[b] = av;
    }
  }
}

// bf16 moments: nothing written where g is not finite.
template <bool kBf16Master>
__global__ void bf16m_kernel(void* p, bf16* m, bf16* v, const float* g, std::size_t n, math::AdamCoeffs c, SrArgs sr) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    const float gi = g[i];
    if (!isfinite(gi)) continue;
    float pi = load_p<kBf16Master>(p, i), mi = bf16_to_float(m[i]), vi = bf16_to_float(v[i]);
    math::adamw_update(pi, mi, vi, gi, c);
    m[i] = float_to_bf16(mi);
    v[i] = float_to_bf16(vi);
    store_p<kBf16Master>(p, i, pi, sr);
  }
}

// fp32 moments under a bf16 master: cpu_adamw's arithmetic (no element skipped), then the rounding.
__global__ void fp32m_bf16_kernel(bf16* p, float* m, float* v, const float* g, std::size_t n, math::AdamCoeffs c,
                                  SrArgs sr) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    float pi = bf16_to_float(p[i]), mi = m[i], vi = v[i];
    math::adamw_update(pi, mi, vi, g[i], c);
    m[i] = mi;
    v[i] = vi;
    store_p<true>(p, i, pi, sr);
  }
}

}  // namespace

void adamw_compressed(cudaStream_t s, const AdamStep& step, const CompressedStates& st, const float* g, std::size_t n,
                      ShardPosition at) {
  const bool bf16_master = st.master == MasterFormat::bf16_sr;
  if (st.moments == MomentFormat::fp32 && !bf16_master)
    return adamw(s, static_cast<float*>(st.p), static_cast<float*>(st.m), static_cast<float*>(st.v), g, n, step,
                 nullptr, DType::f32);
  const math::AdamCoeffs c = adam_coeffs(step);
  const SrArgs sr{at.seed, std::uint64_t(step.step), at.first_element};
  if (n == 0) return;
  switch (st.moments) {
    case MomentFormat::fp32:
      fp32m_bf16_kernel<<<grid_blocks(n), kThreads, 0, s>>>(static_cast<bf16*>(st.p), static_cast<float*>(st.m),
                                                             static_cast<float*>(st.v), g, n, c, sr);
      break;
    case MomentFormat::bf16:
      if (bf16_master)
        bf16m_kernel<true><<<grid_blocks(n), kThreads, 0, s>>>(st.p, static_cast<bf16*>(st.m),
                                                                static_cast<bf16*>(st.v), g, n, c, sr);
      else
        bf16m_kernel<false><<<grid_blocks(n), kThreads, 0, s>>>(st.p, static_cast<bf16*>(st.m),
                                                                 static_cast<bf16*>(st.v), g, n, c, sr);
      break;
    case MomentFormat::int8: {
      TZ_CHECK(at.first_element % kQuantBlock == 0, "int8 moments: the shard starts at element ", at.first_element,
               " of its tensor, not on a block of ", kQuantBlock);
      TZ_CHECK(st.m_absmax && st.v_absmax, "int8 moments need their absmax arrays");
      upload_tables();
      const unsigned blocks = unsigned(std::min<std::size_t>(quant_blocks(n), kMaxBlocks));
      auto* m = static_cast<std::uint8_t*>(st.m);
      auto* v = static_cast<std::uint8_t*>(st.v);
      if (bf16_master)
        int8_kernel<true><<<blocks, kThreads, 0, s>>>(st.p, m, st.m_absmax, v, st.v_absmax, g, n, c, sr);
      else
        int8_kernel<false><<<blocks, kThreads, 0, s>>>(st.p, m, st.m_absmax, v, st.v_absmax, g, n, c, sr);
      break;
    }
  }
  TZ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tz::cuda
