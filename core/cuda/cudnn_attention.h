// cuDNN's fused flash attention as the cuda backend runs it (Attention::cudnn): the graphs of
// cudnn_sdpa_graph.h, planned once per shape and dtype and cached (as CublasLtGemm caches its products),
// each call only setting pointers and executing on the call's stream through the device's one cuDNN handle.
// Its contract is the backend's (core/backend.h): out and the row log-sum-exp [B,NH,T] in `saved`, and
// dqkv written whole; the scratch holds backward's row sums then cuDNN's workspace
// (core/attention_scratch.h), never memory of cuDNN's own.
//
// forward()/backward() return false when the call is the kernels' to run: fp32 activations, a head size
// that is not a multiple of 8 up to 128, T = 1, or cuDNN unable to run the shape (library missing, a GPU
// other than Hopper, a cuDNN with a known bug for it, no engine, a workspace over the scratch). Those last
// reasons are logged once (the library's once per device, a shape's once per shape) unless CudnnFallback is
// refuse: then they throw. Both directions of a shape are planned together, so a shape runs on one path.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "core/backend.h"
#include "core/cuda/cuda_device.h"
#include "core/cuda/cudnn_graph.h"

namespace tz::cuda {

class CudnnAttention {
 public:
  // Loads nothing yet: `library` ("" : libcudnn.so.9) is opened, and the handle made on the calling
  // thread's current GPU, at the first call cuDNN should run.
  CudnnAttention(CudnnFallback fallback, std::string library);
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  // Why cuDNN is never asked to run this shape and activation dtype ("" when it is): decided without cuDNN.
  static std::string not_cudnns(const AttentionShape& a, DType act);
  // Why this cuDNN version must not run the shape ("" when it may): the bugs cudnn-frontend works around.
  static std::string version_refuses(std::size_t cudnn_version, const AttentionShape& a);

  // Backend::attention_forward / attention_backward on cuDNN; `scratch` holds `scratch_floats` floats.
  bool forward(cudaStream_t s, View out, float* lse, float* scratch, std::size_t scratch_floats, CView qkv,
               const AttentionShape& a);
  bool backward(cudaStream_t s, View dqkv, float* scratch, std::size_t scratch_floats, CView dout, CView qkv,
                CView out, const float* lse, const AttentionShape& a);

  // The larger of the shape's two plans' workspaces, once planned (0 before, or when cuDNN does not run it).
  std::size_t workspace_bytes(const AttentionShape& a, DType act);
  // The loaded cuDNN's version (0 before the first load, or when it failed).
  std::size_t cudnn_version();

 private:
  struct Plans {
    std::string refused;  // why cuDNN does not run the shape ("" when it does)
    CudnnPlan forward, backward;
    float scale = 0, mask_value = 0, one = 1;  // the by-value scalars (stable addresses for execution)
    bool misaligned_logged = false;
  };
  using Key = std::tuple<int, int, int, int, int, int>;

  // The rest run under mu_. ready(): the library and the handle, made at the first call (false when they
  // failed: logged once, or thrown with CudnnFallback::refuse).
  bool ready();
  // The shape's plans, built at its first call for a workspace of at most `room` bytes.
  Plans& plans(const AttentionShape& a, DType act, std::size_t room);
  // ready() and plans() for a call on this scratch: null when the kernels run it (or a throw, with refuse).
  Plans* usable(const AttentionShape& a, DType act, const float* scratch, std::size_t scratch_bytes);
  // Whether every pointer has the graphs' 16-byte alignment (a shape logs its first that does not).
  bool aligned(Plans& p, const AttentionShape& a, DType act, std::initializer_list<const void*> ptrs);
  // The plan's workspace in `scratch` (null when it needs none); throws naming both sizes when it does not
  // fit.
  void* workspace(const CudnnPlan& plan, float* scratch, std::size_t scratch_bytes, const AttentionShape& a,
                  DType act);
  // Logs `why`, or throws it with CudnnFallback::refuse.
  void decline(const std::string& why);
  // Runs a built plan; a failure of cuDNN's marks the shape refused (logged, or thrown) and returns false.
  bool run(Plans& p, const CudnnPlan& plan, cudaStream_t s, const std::vector<std::int64_t>& uids,
           const std::vector<void*>& ptrs, void* ws);

  CudnnFallback fallback_;
  std::string library_;
  std::mutex mu_;  // the handle's stream, the plans
  const CudnnApi* api_ = nullptr;
  cudnnHandle_t handle_ = nullptr;
  std::string unavailable_;  // why the library or handle failed ("" while they have not)
  std::map<Key, Plans> plans_;
};

// Where a cuDNN plan's workspace lies in the attention scratch: its byte offset (the row floats, then up to
// the next 256-byte boundary of the address), or a throw naming the workspace's and the scratch's sizes
// when the scratch is too small.
std::size_t cudnn_workspace_offset(std::uintptr_t scratch, std::size_t scratch_bytes, std::size_t row_bytes,
                                   std::size_t workspace_bytes, const std::string& what);

}  // namespace tz::cuda
