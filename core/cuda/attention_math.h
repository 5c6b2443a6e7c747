// The arithmetic the fused attention kernels run: fp32 on SIMT cores (kernels.h's attention_forward /
// attention_backward, close to the cpu backend), or bf16 tiles on tensor cores for speed.
#pragma once

#include <cuda_runtime.h>

#include "core/cuda/kernels.h"

namespace tz::cuda {

enum class AttentionMath {
  fp32_simt,          // every product in fp32 (fmaf); within ~1e-6 relative of the cpu backend
  bf16_tensor_cores,  // q, k, v, dout (already bf16 in a bf16 run), P and dS rounded to bf16 for
                      // nvcuda::wmma 16x16x16 products with fp32 accumulation; softmax, lse and D in
                      // fp32. Head sizes up to kMaxBf16HeadSize.
};

// The largest head size the bf16 tensor-core kernels are compiled for.
inline constexpr int kMaxBf16HeadSize = 128;

// As kernels.h's, with the arithmetic chosen (fp32_simt calls those). Same arguments, same outputs:
// lse [B,NH,T] and drow [B,NH,T] in fp32, and backward writes every element of dqkv. Activations (qkv,
// out, dout, dqkv) share one dtype, fp32, bf16 or fp16; on the tensor-core path bf16 ones are the
// products' operands as they are.
void attention_forward(cudaStream_t s, View out, float* lse, CView qkv, const AttentionShape& a,
                       AttentionMath math);
void attention_backward(cudaStream_t s, View dqkv, float* drow, CView dout, CView qkv, CView out,
                        const float* lse, const AttentionShape& a, AttentionMath math);

}  // namespace tz::cuda
