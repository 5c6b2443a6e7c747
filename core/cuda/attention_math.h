// The arithmetic the fused attention kernels run: fp32 on SIMT cores (kernels.h's attention_forward /
// attention_backward, close to the cpu backend), or bf16 tiles on tensor cores for speed.
#pragma once

#include <cuda_runtime.h>

#include "core/cuda/kernels.h"

namespace tz::cuda {

enum class AttentionMath {
  fp32_simt,          // every product in fp32 (fmaf); within ~1e-6 relative of the cpu backend
  bf16_tensor_cores,  // q, k, v, dout, P and dS rounded to bf16 for nvcuda::wmma 16x16x16 products
                      // with fp32 accumulation; softmax, lse and D in fp32. Head sizes up to 128.
};

// As kernels.h's, with the arithmetic chosen (fp32_simt calls those). Same arguments, same outputs:
// lse [B,NH,T] and drow [B,NH,T], and backward writes every element of dqkv.
void attention_forward(cudaStream_t s, float* out, float* lse, const float* qkv, int B, int T, int C, int NH,
                       AttentionMath math);
void attention_backward(cudaStream_t s, float* dqkv, float* drow, const float* dout, const float* qkv,
                        const float* out, const float* lse, int B, int T, int C, int NH, AttentionMath math);

}  // namespace tz::cuda
