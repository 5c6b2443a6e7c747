// Causal multi-head self-attention on the CPU (forward saves the softmax; backward recomputes nothing).
#pragma once

namespace tz::cpu {

void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH);
void attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv, const float* att, int B, int T,
                        int C, int NH);

}  // namespace tz::cpu
