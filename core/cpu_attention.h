// Causal self-attention on the CPU with grouped-query heads (forward saves the softmax; backward
// recomputes nothing). Shapes as Backend::attention_forward's (core/backend.h).
#pragma once

#include "core/backend.h"

namespace tz::cpu {

void attention_forward(float* out, float* att, const float* qkv, const AttentionShape& a);
void attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv, const float* att,
                        const AttentionShape& a);

}  // namespace tz::cpu
