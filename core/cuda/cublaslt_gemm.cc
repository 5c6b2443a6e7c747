// cuBLASLt products for the CUDA backend (see cublaslt_gemm.h). cuBLAS is column-major: a row-major
// X[r,c] is a column-major X^T, so row-major C = op(A) op(B) is computed as column-major
// C^T = op(B)^T op(A)^T: the operands swap places, M and N swap, and each keeps its own Trans flag. C (and
// D, the same buffer) is fp32 (weight gradients) or the inputs' dtype (activations).
#include "core/cuda/cublaslt_gemm.h"

#include <cuda_runtime.h>

#include "core/cuda/cuda_runtime.h"

namespace tz::cuda {
namespace {

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f32:
      return CUDA_R_32F;
    case DType::bf16:
      return CUDA_R_16BF;
    case DType::f16:
      return CUDA_R_16F;
    default:
      break;
  }
  TZ_FAIL("gemm operands cannot be ", dtype_name(t), " (f32, bf16 or f16)");
}

// The largest power of two, up to 256 (what cuBLASLt asks by default), that divides the address.
int alignment(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  int align = 256;
  while (align > 1 && a % std::uintptr_t(align) != 0) align /= 2;
  return align;
}

cublasOperation_t op(Trans t) { return t == Trans::yes ? CUBLAS_OP_T : CUBLAS_OP_N; }

// A column-major layout of `rows` x `cols` with leading dimension `rows` (dense).
cublasLtMatrixLayout_t layout(cudaDataType_t type, int rows, int cols) {
  cublasLtMatrixLayout_t l = nullptr;
  TZ_CUBLAS_CHECK(
      cublaslt().layout_create(&l, type, std::uint64_t(rows), std::uint64_t(cols), std::int64_t(rows)));
  return l;
}

}  // namespace

CublasLtGemm::CublasLtGemm(Allocator& device_memory, Tf32 tf32) : tf32_(tf32) {
  TZ_CUBLAS_CHECK(cublaslt().create(&handle_));
  try {
    workspace_ = Buffer<std::byte>(device_memory, kCudaGemmWorkspaceBytes, "cuBLASLt workspace");
    TZ_CUDA_CHECK(cudaEventCreateWithFlags(&last_done_, cudaEventDisableTiming));
  } catch (...) {
    cublaslt().destroy(handle_);
    throw;
  }
}

CublasLtGemm::~CublasLtGemm() {
  for (auto& [key, p] : plans_) {
    cublaslt().layout_destroy(p.a);
    cublaslt().layout_destroy(p.b);
    cublaslt().layout_destroy(p.c);
    cublaslt().desc_destroy(p.op);
  }
  if (last_done_) cudaEventDestroy(last_done_);
  if (handle_ && cublaslt().destroy(handle_) != CUBLAS_STATUS_SUCCESS) log_line("cublasLtDestroy failed");
}

const CublasLtGemm::Plan& CublasLtGemm::plan(Trans ta, Trans tb, int M, int N, int K, CView A, CView B,
                                             View C, Accumulate acc) {
  const int align_a = alignment(A.ptr), align_b = alignment(B.ptr), align_c = alignment(C.ptr);
  const Key key{int(ta), int(tb), M, N, K, int(A.dtype), int(C.dtype), int(acc), align_a, align_b, align_c};
  if (auto it = plans_.find(key); it != plans_.end()) return it->second;

  const cudaDataType_t in = cuda_type(A.dtype), out = cuda_type(C.dtype);
  // fp32 accumulation always; TF32 rounding of fp32 inputs only when asked for.
  const cublasComputeType_t compute =
      A.dtype == DType::f32 && tf32_ == Tf32::on ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  Plan p;
  try {
    TZ_CUBLAS_CHECK(cublaslt().desc_create(&p.op, compute, CUDA_R_32F));
    // cuBLAS's first operand is op(B)^T: B stored [K,N] (no) is column-major N x K; stored [N,K] (yes) is
    // column-major K x N, transposed by the op. Likewise its second operand op(A)^T from A.
    const cublasOperation_t op_first = op(tb), op_second = op(ta);
    TZ_CUBLAS_CHECK(
        cublaslt().desc_set(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof(op_first)));
    TZ_CUBLAS_CHECK(
        cublaslt().desc_set(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof(op_second)));
    p.a = tb == Trans::no ? layout(in, N, K) : layout(in, K, N);
    p.b = ta == Trans::no ? layout(in, K, M) : layout(in, M, K);
    p.c = layout(out, N, M);

    cublasLtMatmulPreference_t pref = nullptr;
    TZ_CUBLAS_CHECK(cublaslt().pref_create(&pref));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    try {
      const std::uint64_t ws = workspace_.bytes();
      const std::uint32_t al[4] = {std::uint32_t(align_b), std::uint32_t(align_a), std::uint32_t(align_c),
                                   std::uint32_t(align_c)};
      TZ_CUBLAS_CHECK(cublaslt().pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                           &ws, sizeof(ws)));
      TZ_CUBLAS_CHECK(cublaslt().pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                           &al[0], sizeof(al[0])));
      TZ_CUBLAS_CHECK(cublaslt().pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                           &al[1], sizeof(al[1])));
      TZ_CUBLAS_CHECK(cublaslt().pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                           &al[2], sizeof(al[2])));
      TZ_CUBLAS_CHECK(cublaslt().pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                                           &al[3], sizeof(al[3])));
      // NOT_SUPPORTED: no algorithm fits; the check below names the product.
      const cublasStatus_t rc =
          cublaslt().heuristic(handle_, p.op, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
      if (rc == CUBLAS_STATUS_NOT_SUPPORTED)
        found = 0;
      else
        TZ_CUBLAS_CHECK(rc);
    } catch (...) {
      cublaslt().pref_destroy(pref);
      throw;
    }
    cublaslt().pref_destroy(pref);
    TZ_CHECK(found > 0, "cuBLASLt has no algorithm for a ", dtype_name(A.dtype), " product into ",
             dtype_name(C.dtype), " of M=", M, " N=", N, " K=", K, " (op ", ta == Trans::yes ? "T" : "N",
             tb == Trans::yes ? "T" : "N", ", pointer alignments ", align_a, "/", align_b, "/", align_c,
             " bytes) within a ", format_bytes(workspace_.bytes()), " workspace");
    p.algo = result.algo;
  } catch (...) {
    if (p.a) cublaslt().layout_destroy(p.a);
    if (p.b) cublaslt().layout_destroy(p.b);
    if (p.c) cublaslt().layout_destroy(p.c);
    if (p.op) cublaslt().desc_destroy(p.op);
    throw;
  }
  return plans_.emplace(key, p).first->second;
}

// last_done_ is recorded after every product and every product waits for it (free on the same stream),
// so a product on another stream never touches the previous one (which may have been destroyed since,
// and its handle reused).
void CublasLtGemm::serialise_workspace(cudaStream_t s) {
  if (last_stream_) TZ_CUDA_CHECK(cudaStreamWaitEvent(s, last_done_, 0));
  last_stream_ = s;
}

void CublasLtGemm::run(cudaStream_t s, Trans ta, Trans tb, int M, int N, int K, CView A, CView B, View C,
                       Accumulate acc) {
  TZ_CHECK(M >= 0 && N >= 0 && K >= 0, "gemm: negative shape M=", M, " N=", N, " K=", K);
  TZ_CHECK(A.dtype == B.dtype, "gemm: A is ", dtype_name(A.dtype), " but B is ", dtype_name(B.dtype));
  TZ_CHECK(C.dtype == DType::f32 || C.dtype == A.dtype, "gemm: C is ", dtype_name(C.dtype),
           " but A and B are ", dtype_name(A.dtype), ": C must be fp32 or the inputs' dtype");
  if (M == 0 || N == 0) return;
  // An empty sum: C = 0 (all-zero bytes in every float type), or C unchanged (cuBLASLt refuses k = 0).
  if (K == 0) {
    if (acc == Accumulate::no)
      TZ_CUDA_CHECK(cudaMemsetAsync(C.ptr, 0, std::size_t(M) * N * dtype_size(C.dtype), s));
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  const Plan& p = plan(ta, tb, M, N, K, A, B, C, acc);
  serialise_workspace(s);
  const float alpha = 1.0f, beta = acc == Accumulate::yes ? 1.0f : 0.0f;
  TZ_CUBLAS_CHECK(cublaslt().matmul(handle_, p.op, &alpha, B.ptr, p.a, A.ptr, p.b, &beta, C.ptr, p.c, C.ptr,
                                    p.c, &p.algo, workspace_.data(), workspace_.bytes(), s));
  TZ_CUDA_CHECK(cudaEventRecord(last_done_, s));
}

}  // namespace tz::cuda
