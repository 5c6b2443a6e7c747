// The CUDA backend (see cuda_backend.h): each operation is core/cuda/kernels.h's launch function (or
// cuBLASLt's product, or cuDNN's attention) on the stream's handle. Nothing here synchronises the host,
// except copies between device and pageable memory (see copy_async).
#include "core/cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <cstring>
#include <memory>

#include "core/attention_scratch.h"
#include "core/cuda/attention_math.h"
#include "core/cuda/cublaslt_gemm.h"
#include "core/cuda/cuda_runtime.h"
#include "core/cuda/cuda_stream.h"
#include "core/cuda/cudnn_attention.h"
#include "core/cuda/kernels.h"

namespace tz::cuda {
namespace {

enum class Where { device, pinned, pageable };

// Where a pointer lives (interior pointers included); cudaHostRegister'ed memory counts as pinned.
Where where(const void* p) {
  cudaPointerAttributes attr{};
  TZ_CUDA_CHECK(cudaPointerGetAttributes(&attr, p));
  switch (attr.type) {
    case cudaMemoryTypeDevice:
    case cudaMemoryTypeManaged:
      return Where::device;
    case cudaMemoryTypeHost:
      return Where::pinned;
    default:
      return Where::pageable;
  }
}

// Host-to-host work run by CUDA's host-function thread in stream order: cudaMemcpyAsync between two host
// buffers is performed at once on the calling thread (CUDA documents it as synchronous with respect to
// the host), not after the stream's earlier work, and a kernel cannot reach pageable memory.
struct HostWork {
  void* dst;
  const void* src;  // null: fill with `value`
  int value;
  std::size_t bytes;
};

void CUDART_CB run_host_work(void* arg) {
  auto* w = static_cast<HostWork*>(arg);
  if (w->src)
    std::memcpy(w->dst, w->src, w->bytes);
  else
    std::memset(w->dst, w->value, w->bytes);
  delete w;
}

void enqueue_host_work(cudaStream_t stream, const HostWork& work) {
  auto* w = new HostWork(work);
  const cudaError_t rc = cudaLaunchHostFunc(stream, run_host_work, w);
  if (rc != cudaSuccess) delete w;
  TZ_CUDA_CHECK(rc);
}

class CudaBackend final : public Backend {
 public:
  CudaBackend(Allocator& device_memory, const CudaOptions& o)
      : gemm_(device_memory, o.tf32), attention_(o.attention) {
    if (o.attention == Attention::cudnn)
      cudnn_ = std::make_unique<CudnnAttention>(o.cudnn_fallback, o.cudnn_library);
  }

  void gemm(Stream& s, Trans ta, Trans tb, int M, int N, int K, CView A, CView B, View C,
            Accumulate acc) override {
    gemm_.run(stream_of(s), ta, tb, M, N, K, A, B, C, acc);
  }

  // cuBLASLt reads 16-bit inputs as they are: nothing is widened (gemm_workspace_floats(cuda) is 0).
  void set_gemm_workspace(float*, std::size_t) override {}

  void add_bias(Stream& s, View out, CView bias, int rows, int cols) override {
    cuda::add_bias(stream_of(s), out, bias, rows, cols);
  }
  void bias_backward(Stream& s, float* dbias, CView dout, int rows, int cols) override {
    cuda::bias_backward(stream_of(s), dbias, dout, rows, cols);
  }
  void encoder_forward(Stream& s, View out, const std::int32_t* tokens, CView wte, CView wpe, int B, int T,
                       int C) override {
    cuda::encoder_forward(stream_of(s), out, tokens, wte, wpe, B, T, C);
  }
  void encoder_backward(Stream& s, float* dwte, float* dwpe, CView dout, const std::int32_t* tokens, int B,
                        int T, int C) override {
    cuda::encoder_backward(stream_of(s), dwte, dwpe, dout, tokens, B, T, C);
  }
  void layernorm_forward(Stream& s, View out, float* mean, float* rstd, CView inp, CView w, CView b, int N,
                         int C) override {
    cuda::layernorm_forward(stream_of(s), out, mean, rstd, inp, w, b, N, C);
  }
  void layernorm_backward(Stream& s, View dinp, float* dw, float* db, CView dout, CView inp, CView w,
                          const float* mean, const float* rstd, int N, int C) override {
    cuda::layernorm_backward(stream_of(s), dinp, dw, db, dout, inp, w, mean, rstd, N, C);
  }
  void gelu_forward(Stream& s, View out, CView inp, std::size_t n) override {
    cuda::gelu_forward(stream_of(s), out, inp, n);
  }
  void gelu_backward(Stream& s, View dinp, CView inp, CView dout, std::size_t n) override {
    cuda::gelu_backward(stream_of(s), dinp, inp, dout, n);
  }
  using Backend::attention_backward;  // GPT-2's (B, T, C, NH) forms
  using Backend::attention_forward;
  // cuDNN (Attention::cudnn) where it runs the call, else the fused kernels. Both keep only lse in `saved`;
  // the kernels need no scratch in forward and keep drow in backward's, cuDNN its row sums and workspace
  // (core/attention_scratch.h, whose size the plan gave the scratch).
  void attention_forward(Stream& s, View out, float* saved, float* scratch, CView qkv,
                         const AttentionShape& a) override {
    const cudaStream_t stream = stream_of(s);
    if (cudnn_ &&
        cudnn_->forward(stream, out, saved, scratch, cuda_attention_scratch_floats(a, qkv.dtype), qkv, a))
      return;
    cuda::attention_forward(stream, out, saved, qkv, a, attention_math(a));
  }
  void attention_backward(Stream& s, View dqkv, float* scratch, CView dout, CView qkv, CView out,
                          const float* saved, const AttentionShape& a) override {
    const cudaStream_t stream = stream_of(s);
    if (cudnn_ && cudnn_->backward(stream, dqkv, scratch, cuda_attention_scratch_floats(a, qkv.dtype), dout,
                                   qkv, out, saved, a))
      return;
    cuda::attention_backward(stream, dqkv, scratch, dout, qkv, out, saved, a, attention_math(a));
  }
  void rmsnorm_forward(Stream& s, View out, float* rstd, CView inp, CView w, int N, int C,
                       float eps) override {
    cuda::rmsnorm_forward(stream_of(s), out, rstd, inp, w, N, C, eps);
  }
  void rmsnorm_backward(Stream& s, View dinp, float* dw, CView dout, CView inp, CView w, const float* rstd,
                        int N, int C) override {
    cuda::rmsnorm_backward(stream_of(s), dinp, dw, dout, inp, w, rstd, N, C);
  }
  void rope(Stream& s, View x, const float* table, int N, int T, int heads, int hd, int stride,
            bool inverse) override {
    cuda::rope(stream_of(s), x, table, N, T, heads, hd, stride, inverse);
  }
  void swiglu_forward(Stream& s, View out, CView gate_up, int N, int I) override {
    cuda::swiglu_forward(stream_of(s), out, gate_up, N, I);
  }
  void swiglu_backward(Stream& s, View dgate_up, CView gate_up, CView dout, int N, int I) override {
    cuda::swiglu_backward(stream_of(s), dgate_up, gate_up, dout, N, I);
  }
  void add(Stream& s, View out, CView a, CView b, std::size_t n) override {
    cuda::add(stream_of(s), out, a, b, n);
  }
  void axpy(Stream& s, float* y, float alpha, const float* x, std::size_t n) override {
    cuda::axpy(stream_of(s), y, alpha, x, n);
  }
  void softmax_xent(Stream& s, float* losses, View logits, const std::int32_t* targets, int N, int V, int Vp,
                    float dloss) override {
    cuda::softmax_xent(stream_of(s), losses, logits, targets, N, V, Vp, dloss);
  }
  void cast(Stream& s, void* dst, DType dst_type, const void* src, DType src_type, std::size_t n) override {
    cuda::cast(stream_of(s), dst, dst_type, src, src_type, n);
  }
  void fill(Stream& s, View x, float value, std::size_t n) override { cuda::fill(stream_of(s), x, value, n); }
  void sum(Stream& s, double* acc, const float* x, std::size_t n) override {
    cuda::sum(stream_of(s), acc, x, n);
  }
  void sum(Stream& s, double* acc, const double* x, std::size_t n) override {
    cuda::sum(stream_of(s), acc, x, n);
  }
  void sum_squares(Stream& s, double* acc, const float* x, std::size_t n) override {
    cuda::sum_squares(stream_of(s), acc, x, n);
  }
  void check_finite(Stream& s, double* acc, const float* x, std::size_t n) override {
    cuda::check_finite(stream_of(s), acc, x, n);
  }
  void adamw(Stream& s, float* p, float* m, float* v, const float* g, std::size_t n, const AdamStep& step,
             void* working, DType working_type) override {
    cuda::adamw(stream_of(s), p, m, v, g, n, step, working, working_type);
  }

  void adamw_compressed(Stream& s, const AdamStep& step, const CompressedStates& st, const float* g, std::size_t n,
                        const ShardPosition& at) override {
    cuda::adamw_compressed(stream_of(s), step, st, g, n, at);
  }

  // Device <-> pinned (and device <-> device): cudaMemcpyAsync, asynchronous. Host <-> host: a memcpy in
  // stream order on CUDA's host-function thread (see HostWork). Device <-> pageable: CUDA stages the copy
  // through pinned memory of its own and may read the pageable source at once, before the stream's
  // earlier work has written it, so such a copy waits for the stream first and returns only when it is
  // done: synchronous with respect to the host. The engine's per-step copies use pinned buffers;
  // pageable ones are for set-up and tests.
  void copy_async(Stream& s, void* dst, const void* src, std::size_t bytes) override {
    if (!bytes) return;
    const cudaStream_t stream = stream_of(s);
    const Where to = where(dst), from = where(src);
    if (to != Where::device && from != Where::device) return enqueue_host_work(stream, {dst, src, 0, bytes});
    const bool pageable = to == Where::pageable || from == Where::pageable;
    if (pageable) TZ_CUDA_CHECK(cudaStreamSynchronize(stream));
    TZ_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
    if (pageable) TZ_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  // Device memory: cudaMemsetAsync. Host memory, pinned or pageable: a memset in stream order on CUDA's
  // host-function thread (a kernel cannot reach pageable memory; the CPU fills pinned memory faster than
  // a kernel across PCIe).
  void memset_async(Stream& s, void* dst, int value, std::size_t bytes) override {
    if (!bytes) return;
    const cudaStream_t stream = stream_of(s);
    if (where(dst) == Where::device) {
      TZ_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, stream));
      return;
    }
    enqueue_host_work(stream, {dst, nullptr, value, bytes});
  }

 private:
  // The kernels' arithmetic: bf16 tensor cores where asked for (bf16, and cudnn's fallback) and the head fits
  // them (up to kMaxBf16HeadSize).
  AttentionMath attention_math(const AttentionShape& a) const {
    return attention_ != Attention::fp32 && a.hd <= kMaxBf16HeadSize ? AttentionMath::bf16_tensor_cores
                                                                     : AttentionMath::fp32_simt;
  }

  CublasLtGemm gemm_;
  Attention attention_ = Attention::fp32;
  std::unique_ptr<CudnnAttention> cudnn_;  // Attention::cudnn only
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(Allocator& device_memory, const CudaOptions& options) {
  return std::make_unique<CudaBackend>(device_memory, options);
}

}  // namespace tz::cuda
