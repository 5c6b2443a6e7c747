// Causal self-attention on the CPU with grouped-query heads (forward saves the softmax; backward
// recomputes nothing). Shapes as Backend::attention_forward's (core/backend.h).
#pragma once

#include <cstddef>

#include "core/backend.h"

namespace tz::cpu {

void attention_forward(float* out, float* att, const float* qkv, const AttentionShape& a);
// out: forward's output as stored (null: the softmax's row sum from the probabilities, fp32 runs' bits;
// given: d . out, as the fused GPU kernels compute it from the rounded 16-bit out).
void attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv, const float* att,
                        const float* out, const AttentionShape& a);

}  // namespace tz::cpu

namespace tz {

// Floats of fp32 copies the cpu backend's attention makes of 16-bit activations, after the [B,NH,T,T]
// probability gradient in its scratch: qkv [B*T, qkv_width] and out [B*T, out_width], then in backward
// dout [B*T, out_width] and dqkv [B*T, qkv_width].
inline std::size_t cpu_attention_widened_floats(const AttentionShape& a) {
  return std::size_t(a.B) * a.T * 2 * (std::size_t(a.qkv_width()) + std::size_t(a.out_width()));
}

}  // namespace tz
