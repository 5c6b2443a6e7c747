// The CUDA backend's softmax cross-entropy: one block per row, the row read once for an online maximum
// and sum of exponentials (never copied), then once more to write the gradient, with the CPU backend's
// formulas (math::exp_f, loss = (max - logit[target]) + log(sum)). Logits are T (float, bf16 or fp16):
// read through to_float, the max, sum and loss in fp32, each gradient rounded once to T where stored.
#include <cmath>

#include "core/cuda/cuda_runtime.h"
#include "core/cuda/kernels.h"
#include "core/cuda/launch_config.h"
#include "core/elementwise.h"

namespace tz::cuda {
namespace {

constexpr int kRowThreads = 512;  // Vp = 50304: about 98 logits a thread

// Merges the running (max, sum of exp(x - max)) pair (om, os) into (m, s). Symmetric in its two
// arguments, so both partners of a butterfly step hold the same pair afterwards. Two empty pairs (max
// -Inf, sum 0) stay empty rather than meeting -Inf - -Inf = NaN.
__device__ inline void merge(float& m, float& s, float om, float os) {
  const float mx = m < om ? om : m;
  if (mx == -INFINITY) {
    s = s + os;
  } else {
    s = s * math::exp_f(m - mx) + os * math::exp_f(om - mx);
  }
  m = mx;
}

__device__ inline void warp_merge(float& m, float& s) {
  for (int o = 16; o > 0; o >>= 1) {
    const float om = __shfl_xor_sync(0xffffffffu, m, o);
    const float os = __shfl_xor_sync(0xffffffffu, s, o);
    merge(m, s, om, os);
  }
}

template <typename T>
__global__ void softmax_xent_kernel(float* losses, T* logits, const std::int32_t* targets, int V, int Vp,
                                    float dloss) {
  __shared__ float wm[32], ws[32];
  const std::size_t n = blockIdx.x;
  T* row = logits + n * Vp;
  const int tgt = targets[n];
  const bool valid = tgt >= 0 && tgt < V;
  // Read before the barrier below and so before any thread overwrites the row.
  const float target_logit = threadIdx.x == 0 && valid ? to_float(row[tgt]) : 0.0f;

  // Online max and sum. A NaN logit never becomes the max (as std::max in the CPU backend skips it)
  // but makes the sum NaN; a new max x adds exp_f(x - x), which is 1, or NaN for an infinite x as the
  // CPU's exp_f(x - max) is.
  float m = -INFINITY, s = 0;
  for (int v = threadIdx.x; v < V; v += blockDim.x) {
    const float x = to_float(row[v]);
    if (x > m) {
      s = s * math::exp_f(m - x) + math::exp_f(x - x);
      m = x;
    } else if (m != -INFINITY || x != x) {
      // (-inf - -inf would be NaN: an all -inf prefix adds nothing, as the CPU's tiny exp_f of -inf)
      s = s + math::exp_f(x - m);
    }
  }
  warp_merge(m, s);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  if (lane == 0) {
    wm[warp] = m;
    ws[warp] = s;
  }
  __syncthreads();
  m = lane < nwarps ? wm[lane] : -INFINITY;
  s = lane < nwarps ? ws[lane] : 0.0f;
  warp_merge(m, s);  // every warp merges the same pairs in the same tree: one (max, sum) for the block

  const float inv = 1.0f / s;
  for (int v = threadIdx.x; v < Vp; v += blockDim.x)
    row[v] = from_float<T>(v < V ? math::exp_f(to_float(row[v]) - m) * inv * dloss : 0.0f);
  __syncthreads();  // row[tgt] has been written
  if (threadIdx.x == 0) {
    if (valid) {
      losses[n] = (m - target_logit) + logf(s);
      // The target's gradient from its fp32 probability term (what the loop above stored before rounding),
      // so a 16-bit row is rounded once: p * dloss - dloss, then to T.
      row[tgt] = from_float<T>(math::exp_f(target_logit - m) * inv * dloss - dloss);
    } else {
      losses[n] = NAN;  // a target outside [0, V): no row to subtract from; the loss says so
    }
  }
}

}  // namespace

void softmax_xent(cudaStream_t s, float* losses, View logits, const std::int32_t* targets, int N, int V,
                  int Vp, float dloss) {
  TZ_CHECK(N >= 0 && V > 0 && Vp >= V, "softmax_xent needs N >= 0 rows and 0 < V <= Vp, got N ", N, ", V ", V,
           ", Vp ", Vp);
  with_activation_type(logits.dtype, "softmax_xent", [&](auto* type) {
    using T = pointee_t<decltype(type)>;
    if (N == 0) return;
    softmax_xent_kernel<<<unsigned(N), kRowThreads, 0, s>>>(losses, static_cast<T*>(logits.ptr), targets, V,
                                                            Vp, dloss);
    TZ_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace tz::cuda
