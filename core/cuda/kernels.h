// The CUDA backend's kernels (besides cuBLASLt's matrix products), one launch function per Backend
// operation, each enqueued on `stream`. Arguments and semantics are Backend's (core/backend.h); the
// elementwise arithmetic is core/elementwise.h's and core/dtype.h's TZ_HOST_DEVICE functions, compiled
// without FMA contraction (--fmad=false, as the CPU's -ffp-contract=off), so an elementwise kernel gives
// the CPU backend's bits. Reductions use a fixed tree (no float atomics), so results do not depend on
// timing: the same inputs give the same bits on every run.
//
// Activations (View / CView) are fp32, bf16 or fp16, one dtype per call (a mix is refused, naming the
// operation and both dtypes); every kernel is a template over their element type T. An element is read
// through to_float, the arithmetic is the fp32 arithmetic in the fp32 kernel's order, and each result is
// rounded once, by from_float<T>, where it is stored; a read-modify-write (dinp +=, out += bias) reads T,
// adds in fp32 and rounds once. With T = float this is exactly the fp32 kernel. Statistics (mean, rstd,
// lse, drow), losses and parameter gradients stay fp32.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/adam_compressed.h"
#include "core/backend.h"
#include "core/dtype.h"
#include "core/view.h"

namespace tz::cuda {

// elementwise_kernels.cu
void add_bias(cudaStream_t s, View out, CView bias, int rows, int cols);
void bias_backward(cudaStream_t s, float* dbias, CView dout, int rows, int cols);
void encoder_forward(cudaStream_t s, View out, const std::int32_t* tokens, CView wte, CView wpe, int B, int T,
                     int C);
void encoder_backward(cudaStream_t s, float* dwte, float* dwpe, CView dout, const std::int32_t* tokens, int B,
                      int T, int C);
void gelu_forward(cudaStream_t s, View out, CView inp, std::size_t n);
void gelu_backward(cudaStream_t s, View dinp, CView inp, CView dout, std::size_t n);
void add(cudaStream_t s, View out, CView a, CView b, std::size_t n);
void axpy(cudaStream_t s, float* y, float alpha, const float* x, std::size_t n);
void fill(cudaStream_t s, View x, float value, std::size_t n);
void cast(cudaStream_t s, void* dst, DType dst_type, const void* src, DType src_type, std::size_t n);

// layernorm_kernels.cu
void layernorm_forward(cudaStream_t s, View out, float* mean, float* rstd, CView inp, CView w, CView b, int N,
                       int C);
void layernorm_backward(cudaStream_t s, View dinp, float* dw, float* db, CView dout, CView inp, CView w,
                        const float* mean, const float* rstd, int N, int C);

// xent_kernels.cu: one block per row; the row is read in chunks (online max and sum in fp32), never copied.
void softmax_xent(cudaStream_t s, float* losses, View logits, const std::int32_t* targets, int N, int V,
                  int Vp, float dloss);

// reduce_kernels.cu: fixed-size chunks summed in double, then the chunk sums in chunk order.
void sum(cudaStream_t s, double* acc, const float* x, std::size_t n);
void sum(cudaStream_t s, double* acc, const double* x, std::size_t n);
void sum_squares(cudaStream_t s, double* acc, const float* x, std::size_t n);
void check_finite(cudaStream_t s, double* acc, const float* x, std::size_t n);

// adam_kernels.cu: math::adamw_update per element, the working copy written through from_float.
void adamw(cudaStream_t s, float* p, float* m, float* v, const float* g, std::size_t n, const AdamStep& step, void* working,
           DType working_type);

// adam_compressed_kernels.cu: adamw_compressed (core/adam_compressed.h) on the GPU, giving the CPU's bits:
// codes, absmax, moments and master (an fp32 master and fp32 moments: adamw above).
void adamw_compressed(cudaStream_t s, const AdamStep& step, const CompressedStates& st, const float* g, std::size_t n,
                      ShardPosition at);

// attention_{forward,backward}_kernels.cu: fused causal attention with an online softmax (no [T,T]
// matrix in global memory), grouped-query heads read in place (AttentionShape; KVH == NH is GPT-2's
// multi-head). lse: [B,NH,T] log-sum-exp of each query row's scaled scores (what backward needs); drow:
// [B,NH,T] scratch (rowsum of dout * out). Backward writes every element of dqkv; a key-value head's dK
// and dV sum over its G = NH / KVH query heads in head order (one block owns them: no atomics). Head
// sizes up to 256 (a larger one throws, naming it). qkv, out, dout and dqkv in T; tiles are widened to fp32
// in shared memory as they are loaded.
void attention_forward(cudaStream_t s, View out, float* lse, CView qkv, const AttentionShape& a);
void attention_backward(cudaStream_t s, View dqkv, float* drow, CView dout, CView qkv, CView out,
                        const float* lse, const AttentionShape& a);

// llama_kernels.cu: Llama's RMSNorm, rotary embedding and SwiGLU. rmsnorm: one block per row, the row's
// sum of squares in a fixed tree; dw summed over rows in a fixed order (layernorm's column pattern).
// rope and swiglu are elementwise over the shared math (math::rope_rotate, math::swiglu,
// math::swiglu_grad): the CPU backend's bits.
void rmsnorm_forward(cudaStream_t s, View out, float* rstd, CView inp, CView w, int N, int C, float eps);
void rmsnorm_backward(cudaStream_t s, View dinp, float* dw, CView dout, CView inp, CView w, const float* rstd,
                      int N, int C);
void rope(cudaStream_t s, View x, const float* table, int N, int T, int heads, int hd, int stride,
          bool inverse);
void swiglu_forward(cudaStream_t s, View out, CView gate_up, int N, int I);
void swiglu_backward(cudaStream_t s, View dgate_up, CView gate_up, CView dout, int N, int I);

}  // namespace tz::cuda
