// Launch shapes shared by the CUDA kernels (and by their tests, which size inputs to need more than one
// grid lap), and the dispatch from a run-time DType to a kernel's element type: parameters
// (with_param_type) and activations (with_activation_type, after activation_dtype's check that a call's
// activations agree).
#pragma once

#include <cstddef>
#include <type_traits>

#include "core/backend.h"
#include "core/dtype.h"
#include "core/error.h"

namespace tz::cuda {

// Elementwise kernels: 256 threads a block, grid-stride loops over at most kMaxBlocks blocks (2 Mi
// threads, several waves of any current GPU), so a launch never exceeds grid limits whatever n is.
inline constexpr int kThreads = 256;
inline constexpr std::size_t kMaxBlocks = 8192;
inline constexpr std::size_t kGridLap = kMaxBlocks * kThreads;

inline unsigned grid_blocks(std::size_t n) {
  std::size_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < kMaxBlocks ? b : kMaxBlocks);
}

// sum and sum_squares: host_ops.cc's chunk (the CPU's fixed chunks), one block a chunk, in rounds of
// kSumRoundChunks chunks (2^26 elements, one wave of blocks) whose chunk sums wait in static device
// memory (reduce_kernels.cu).
inline constexpr std::size_t kSumChunk = std::size_t(1) << 16;
inline constexpr unsigned kSumRoundChunks = 1024;

// Calls f with a null pointer of the element type of `t` (f32, bf16 or f16), so f can pick the kernel
// template instance: the CPU backend's with_params on the device side.
template <typename F>
void with_param_type(DType t, const char* what, F&& f) {
  switch (t) {
    case DType::f32:
      f(static_cast<const float*>(nullptr));
      break;
    case DType::bf16:
      f(static_cast<const bf16*>(nullptr));
      break;
    case DType::f16:
      f(static_cast<const fp16*>(nullptr));
      break;
    default:
      TZ_FAIL(what, " cannot be ", dtype_name(t), ": use fp32, bf16 or fp16");
  }
}

// Every activation argument of one call shares the run's activation dtype (core/backend.h): `b` must be
// `a`'s, or the call is refused naming the operation and both dtypes.
inline void check_same_activations(const char* op, DType a, DType b) {
  TZ_CHECK(a == b, op, ": activations must share one dtype, got ", dtype_name(a), " and ", dtype_name(b));
}

// The activation dtype of a call: the first view's, checked against every other view's.
template <typename... Views>
DType activation_dtype(const char* op, CView first, Views... rest) {
  (check_same_activations(op, first.dtype, CView(rest).dtype), ...);
  return first.dtype;
}

// Calls f with a null pointer of the activation element type of `t` (float, bf16 or fp16), so f can pick
// the kernel template instance: with_param_type's twin for activations, which kernels write as well as
// read (hence the pointer is not const).
template <typename F>
void with_activation_type(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::f32:
      f(static_cast<float*>(nullptr));
      break;
    case DType::bf16:
      f(static_cast<bf16*>(nullptr));
      break;
    case DType::f16:
      f(static_cast<fp16*>(nullptr));
      break;
    default:
      TZ_FAIL(op, ": activations cannot be ", dtype_name(t), ": use fp32, bf16 or fp16");
  }
}

// The element type a with_*_type callback was handed (its pointee without const).
template <typename P>
using pointee_t = std::remove_cv_t<std::remove_pointer_t<P>>;

#if defined(__CUDACC__)
// A grid-stride loop's first index and step, in size_t (n may pass 2^32).
__device__ inline std::size_t first_index() { return blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; }
__device__ inline std::size_t grid_stride() { return std::size_t(gridDim.x) * blockDim.x; }
#endif

}  // namespace tz::cuda
