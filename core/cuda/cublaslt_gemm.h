// Backend::gemm on the GPU through cuBLASLt: row-major products with fp32 accumulation (compute and scale
// type 32F) into an fp32 C or a C of the inputs' 16-bit dtype, each shape planned once (descriptors,
// layouts and the heuristic's algorithm cached) so the per-step path allocates nothing; and
// TZ_CUBLAS_CHECK, the cuBLAS member of the check family. Include only from code in CUDA targets.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "core/allocator.h"
#include "core/backend.h"
#include "core/cuda/cublaslt_api.h"
#include "core/cuda/cuda_device.h"
#include "core/device.h"
#include "core/error.h"

#define TZ_CUBLAS_CHECK(call)                                                                 \
  do {                                                                                        \
    cublasStatus_t tz_cublas_rc_ = (call);                                                    \
    TZ_CHECK_GEN("cuBLAS call failed", tz_cublas_rc_ == CUBLAS_STATUS_SUCCESS, #call,         \
                 ::tz::cuda::cublaslt().status_name(tz_cublas_rc_), ": ",                    \
                 ::tz::cuda::cublaslt().status_string(tz_cublas_rc_));                       \
  } while (0)

namespace tz::cuda {

class CublasLtGemm {
 public:
  // Creates the cuBLASLt handle and takes kCudaGemmWorkspaceBytes of workspace from `device_memory`
  // (counted in its budget). The current GPU must be the one the products run on.
  CublasLtGemm(Allocator& device_memory, Tf32 tf32);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  // Backend::gemm's contract: row-major C[M,N] (+)= op(A) op(B), A and B f32, bf16 or f16, C fp32 or A's
  // dtype (a 16-bit C is read, when accumulating, and written in it by cuBLASLt's epilogue: the fp32
  // alpha * sum + beta * C rounded once). The first product of a shape (and pointer alignment) plans it;
  // later ones only enqueue.
  void run(cudaStream_t s, Trans ta, Trans tb, int M, int N, int K, CView A, CView B, View C, Accumulate acc);

 private:
  // What a plan depends on: the shape, the inputs' and C's dtypes, beta, and the alignment of each pointer
  // (cuBLASLt's fastest algorithms assume 16-byte or better alignment; a view into a parameter arena may
  // have less).
  using Key = std::tuple<int, int, int, int, int, int, int, int, int, int, int>;
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // cuBLAS's A (our B), B (our A), C
    cublasLtMatmulAlgo_t algo{};
  };
  const Plan& plan(Trans ta, Trans tb, int M, int N, int K, CView A, CView B, View C, Accumulate acc);
  // Orders a product on `s` after every earlier one on another stream: they share one workspace.
  void serialise_workspace(cudaStream_t s);

  cublasLtHandle_t handle_ = nullptr;
  Tf32 tf32_;
  Buffer<std::byte> workspace_;
  std::mutex mu_;  // plans_ and the workspace's last stream
  std::map<Key, Plan> plans_;
  cudaStream_t last_stream_ = nullptr;  // non-null once a product has recorded last_done_
  cudaEvent_t last_done_ = nullptr;
};

}  // namespace tz::cuda
