// cuDNN's flash attention for the cuda backend (see cudnn_attention.h): llm.c's attention_forward_cudnn /
// attention_backward_cudnn (llmc/cudnn_att.cpp: a graph cache keyed by shape, the variant pack of Q, K, V
// pointers into the packed qkv, O, Stats and a by-value scale), without the frontend and without memory of
// its own: the workspace is the planned scratch, checked against each plan.
#include "core/cuda/cudnn_attention.h"

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "core/attention_scratch.h"
#include "core/cuda/cuda_runtime.h"
#include "core/cuda/cudnn_sdpa_graph.h"
#include "core/memory_budget.h"

namespace tz::cuda {
namespace {

constexpr std::size_t kWorkspaceAlign = 256;

std::string shape_text(const AttentionShape& a, DType act) {
  return "B=" + std::to_string(a.B) + " T=" + std::to_string(a.T) + " NH=" + std::to_string(a.NH) +
         " KVH=" + std::to_string(a.KVH) + " hd=" + std::to_string(a.hd) + " " + std::string(dtype_name(act));
}

cudnnDataType_t io_type(DType t) { return t == DType::bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF; }

// Element `col` of a packed row-major activation (qkv or dqkv): where the k and v heads start.
void* at_column(const void* base, int col, DType t) {
  return const_cast<std::byte*>(static_cast<const std::byte*>(base) + std::size_t(col) * dtype_size(t));
}

// Every tensor of the graphs says 16-byte alignment (the frontend's default), so every pointer must have it.
bool all_aligned(std::initializer_list<const void*> ptrs) {
  for (const void* p : ptrs)
    if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) return false;
  return true;
}

std::uintptr_t round_up(std::uintptr_t x, std::uintptr_t to) { return (x + to - 1) / to * to; }

}  // namespace

std::size_t cudnn_workspace_offset(std::uintptr_t scratch, std::size_t scratch_bytes, std::size_t row_bytes,
                                   std::size_t workspace_bytes, const std::string& what) {
  const std::size_t offset = round_up(scratch + row_bytes, kWorkspaceAlign) - scratch;
  const std::size_t room = scratch_bytes > offset ? scratch_bytes - offset : 0;
  TZ_CHECK(workspace_bytes <= room, what, ": cuDNN's execution plan needs ", workspace_bytes, " bytes (",
           format_bytes(workspace_bytes), ") of workspace but the attention scratch gives ", room, " bytes (",
           format_bytes(room), ") after its ", offset,
           " bytes of row sums; the scratch must be attention_scratch_floats(cuda, shape, dtype) floats "
           "(core/attention_scratch.h)");
  return offset;
}

CudnnAttention::CudnnAttention(CudnnFallback fallback, std::string library)
    : fallback_(fallback), library_(std::move(library)) {}

CudnnAttention::~CudnnAttention() {
  plans_.clear();  // the execution plans name the handle: they go first
  if (handle_ && api_->destroy(handle_) != CUDNN_STATUS_SUCCESS) log_line("cudnnDestroy failed");
}

std::string CudnnAttention::not_cudnns(const AttentionShape& a, DType act) {
  if (act != DType::bf16 && act != DType::f16)
    return "cuDNN's flash attention runs bf16 and fp16 activations, not " + std::string(dtype_name(act));
  if (a.hd <= 0 || a.hd % 8 != 0 || a.hd > 128)
    return "head size " + std::to_string(a.hd) + " is not a multiple of 8 up to 128";
  if (a.T < 2) return "T = " + std::to_string(a.T) + " (cuDNN's backward does not run a single position)";
  if (a.B < 1 || a.KVH < 1 || a.NH % a.KVH != 0)
    return "NH = " + std::to_string(a.NH) + " is not a multiple of KVH = " + std::to_string(a.KVH);
  return "";
}

std::string CudnnAttention::version_refuses(std::size_t v, const AttentionShape& a) {
  if (v == 91000 || v == 91001)
    return "cuDNN " + cudnn_version_text(v) +
           " has known bugs in this backward (cudnn-frontend refuses 9.10.0 "
           "and 9.10.1)";
  if (v <= 91500 && a.T % 128 != 0)
    return "cuDNN " + cudnn_version_text(v) +
           " can give NaN gradients for T not a multiple of 128 unless "
           "the graph adds a padding mask (cudnn-frontend's workaround up to 9.15.0, issue #160), which "
           "tierzero does not build";
  return "";
}

void CudnnAttention::decline(const std::string& why) {
  if (fallback_ == CudnnFallback::refuse) TZ_FAIL(why);
  log_line(why);
}

bool CudnnAttention::ready() {
  if (handle_) return true;
  if (unavailable_.empty()) {
    try {
      api_ = &cudnn(library_);
      int dev = 0, major = 0, minor = 0;
      TZ_CUDA_CHECK(cudaGetDevice(&dev));
      TZ_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
      TZ_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
      // The backward planned here is deterministic on Hopper (the frontend adds engine knobs elsewhere).
      TZ_CHECK(major == 9, "GPU ", dev, " has compute capability ", major, ".", minor,
               ": tierzero runs cuDNN's attention on Hopper (9.x) only, where its graphs are deterministic");
      TZ_CUDNN_CHECK(*api_, api_->create(&handle_));
    } catch (const Error& e) {
      handle_ = nullptr;
      unavailable_ =
          "cuDNN attention is off on this device (the bf16 tensor-core kernels run every attention): " +
          std::string(e.what());
      if (fallback_ == CudnnFallback::bf16_kernels) log_line(unavailable_);
    }
  }
  if (!handle_ && fallback_ == CudnnFallback::refuse) TZ_FAIL(unavailable_);
  return handle_ != nullptr;
}

CudnnAttention::Plans& CudnnAttention::plans(const AttentionShape& a, DType act, std::size_t room) {
  const Key key{a.B, a.T, a.NH, a.KVH, a.hd, int(act)};
  if (auto it = plans_.find(key); it != plans_.end()) return it->second;
  Plans& p = plans_[key];
  p.scale = 1.0f / std::sqrt(float(a.hd));  // as the kernels and the cpu backend compute it
  p.mask_value = sdpa_mask_value(api_->version());
  p.refused = version_refuses(api_->version(), a);
  if (p.refused.empty()) {
    try {
      p.forward = sdpa_forward_graph(*api_, a, io_type(act)).plan(handle_, room);
      p.backward = sdpa_backward_graph(*api_, a, io_type(act)).plan(handle_, room);
    } catch (const Error& e) {
      p.refused = e.what();
    }
  }
  if (!p.refused.empty()) {
    p.refused =
        "cuDNN attention " + shape_text(a, act) + " runs on the bf16 tensor-core kernels: " + p.refused;
    if (fallback_ == CudnnFallback::bf16_kernels) log_line(p.refused);
  }
  return p;
}

CudnnAttention::Plans* CudnnAttention::usable(const AttentionShape& a, DType act, const float* scratch,
                                              std::size_t scratch_bytes) {
  if (!ready()) return nullptr;
  const auto addr = reinterpret_cast<std::uintptr_t>(scratch);
  const std::size_t offset = round_up(addr + attention_row_floats(a) * sizeof(float), kWorkspaceAlign) - addr;
  Plans& p = plans(a, act, scratch_bytes > offset ? scratch_bytes - offset : 0);
  if (!p.refused.empty()) {
    if (fallback_ == CudnnFallback::refuse) TZ_FAIL(p.refused);
    return nullptr;
  }
  return &p;
}

bool CudnnAttention::aligned(Plans& p, const AttentionShape& a, DType act,
                             std::initializer_list<const void*> ptrs) {
  if (all_aligned(ptrs)) return true;
  const std::string why = "cuDNN attention " + shape_text(a, act) +
                          ": a pointer is not 16-byte aligned, so the kernels run the calls that pass one";
  if (fallback_ == CudnnFallback::refuse) TZ_FAIL(why);
  if (!std::exchange(p.misaligned_logged, true)) log_line(why);
  return false;
}

void* CudnnAttention::workspace(const CudnnPlan& plan, float* scratch, std::size_t scratch_bytes,
                                const AttentionShape& a, DType act) {
  const std::size_t offset = cudnn_workspace_offset(
      reinterpret_cast<std::uintptr_t>(scratch), scratch_bytes, attention_row_floats(a) * sizeof(float),
      plan.workspace_bytes(), "cuDNN attention " + shape_text(a, act));
  return plan.workspace_bytes() ? reinterpret_cast<std::byte*>(scratch) + offset : nullptr;
}

bool CudnnAttention::run(Plans& p, const CudnnPlan& plan, cudaStream_t s,
                         const std::vector<std::int64_t>& uids, const std::vector<void*>& ptrs, void* ws) {
  try {
    TZ_CUDNN_CHECK(*api_, api_->set_stream(handle_, s));
    plan.execute(handle_, uids, ptrs, ws);  // enqueues only: nothing is written if it fails here
    return true;
  } catch (const Error& e) {
    p.refused = std::string(
                    "cuDNN attention failed to execute, so the bf16 tensor-core kernels run this shape "
                    "from now on: ") +
                e.what();
    decline(p.refused);
    return false;
  }
}

bool CudnnAttention::forward(cudaStream_t s, View out, float* lse, float* scratch, std::size_t scratch_floats,
                             CView qkv, const AttentionShape& a) {
  if (!not_cudnns(a, qkv.dtype).empty() || out.dtype != qkv.dtype) return false;
  std::lock_guard lock(mu_);
  Plans* p = usable(a, qkv.dtype, scratch, scratch_floats * sizeof(float));
  if (!p) return false;
  void *q = at_column(qkv.ptr, 0, qkv.dtype), *k = at_column(qkv.ptr, a.out_width(), qkv.dtype),
       *v = at_column(qkv.ptr, a.out_width() + a.KVH * a.hd, qkv.dtype);
  if (!aligned(*p, a, qkv.dtype, {q, k, v, out.ptr, lse, scratch})) return false;
  void* ws = workspace(p->forward, scratch, scratch_floats * sizeof(float), a, qkv.dtype);
  return run(*p, p->forward, s, {kSdpaQ, kSdpaK, kSdpaV, kSdpaO, kSdpaStats, kSdpaScale, kSdpaMaskValue},
             {q, k, v, out.ptr, lse, &p->scale, &p->mask_value}, ws);
}

bool CudnnAttention::backward(cudaStream_t s, View dqkv, float* scratch, std::size_t scratch_floats,
                              CView dout, CView qkv, CView out, const float* lse, const AttentionShape& a) {
  const DType t = qkv.dtype;
  if (!not_cudnns(a, t).empty() || dqkv.dtype != t || dout.dtype != t || out.dtype != t) return false;
  std::lock_guard lock(mu_);
  Plans* p = usable(a, t, scratch, scratch_floats * sizeof(float));
  if (!p) return false;
  const int k_col = a.out_width(), v_col = a.out_width() + a.KVH * a.hd;
  void *q = at_column(qkv.ptr, 0, t), *k = at_column(qkv.ptr, k_col, t), *v = at_column(qkv.ptr, v_col, t);
  void *dq = at_column(dqkv.ptr, 0, t), *dk = at_column(dqkv.ptr, k_col, t),
       *dv = at_column(dqkv.ptr, v_col, t);
  void *o = const_cast<void*>(out.ptr), *d_o = const_cast<void*>(dout.ptr), *stats = const_cast<float*>(lse);
  if (!aligned(*p, a, t, {q, k, v, dq, dk, dv, o, d_o, stats, scratch})) return false;
  void* ws = workspace(p->backward, scratch, scratch_floats * sizeof(float), a, t);
  return run(*p, p->backward, s,
             {kSdpaQ, kSdpaK, kSdpaV, kSdpaO, kSdpaDO, kSdpaStats, kSdpaDQ, kSdpaDK, kSdpaDV, kSdpaScale,
              kSdpaMaskValue, kSdpaOne, kSdpaSoftmaxSum},
             {q, k, v, o, d_o, stats, dq, dk, dv, &p->scale, &p->mask_value, &p->one, scratch}, ws);
}

std::size_t CudnnAttention::workspace_bytes(const AttentionShape& a, DType act) {
  std::lock_guard lock(mu_);
  auto it = plans_.find(Key{a.B, a.T, a.NH, a.KVH, a.hd, int(act)});
  if (it == plans_.end() || !it->second.refused.empty()) return 0;
  return std::max(it->second.forward.workspace_bytes(), it->second.backward.workspace_bytes());
}

std::size_t CudnnAttention::cudnn_version() {
  std::lock_guard lock(mu_);
  return api_ ? api_->version() : 0;
}

}  // namespace tz::cuda
