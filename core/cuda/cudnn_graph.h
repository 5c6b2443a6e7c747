// cuDNN's backend graph API (cudnn_graph.h) in RAII types: descriptors that destroy themselves, tensors and
// operations made the way cudnn-frontend's nodes lower them (each attribute set by name; any failure names
// the graph, the descriptor and the attribute), an operation graph finalized on a handle, an execution plan
// taken from heuristics mode A's list within a workspace limit, and execution with a variant pack per call.
// The attention graphs built with it: cudnn_sdpa_graph.h. Include only from code in CUDA targets.
#pragma once

#include <cudnn_graph.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "core/cuda/cudnn_api.h"

namespace tz::cuda {

// One backend descriptor (move-only), destroyed with its owner. `what` names it in errors.
class CudnnDescriptor {
 public:
  CudnnDescriptor(const CudnnApi& api, cudnnBackendDescriptorType_t type, std::string what);
  ~CudnnDescriptor();
  CudnnDescriptor(CudnnDescriptor&& o) noexcept;
  CudnnDescriptor& operator=(CudnnDescriptor&&) = delete;
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return d_; }
  const std::string& what() const { return what_; }
  // cudnnBackendSetAttribute; `name` is the attribute's name for the error.
  void set(cudnnBackendAttributeName_t attr, const char* name, cudnnBackendAttributeType_t type,
           std::int64_t count, const void* values);
  void set_int64(cudnnBackendAttributeName_t attr, const char* name, std::int64_t v);
  void set_descriptor(cudnnBackendAttributeName_t attr, const char* name, const CudnnDescriptor& d);
  // cudnnBackendFinalize, throwing on failure; try_finalize returns the status instead.
  void finalize();
  cudnnStatus_t try_finalize();

 private:
  const CudnnApi* api_;
  cudnnBackendDescriptor_t d_ = nullptr;
  std::string what_;
};

// A tensor of the graph: its uid (the variant pack's key for one in memory), dtype, dims and strides.
struct CudnnTensor {
  std::int64_t uid = 0;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  std::vector<std::int64_t> dims, strides;
  bool is_virtual = false, by_value = false;
  const CudnnDescriptor* desc = nullptr;
};

// A finalized execution plan and everything it was built from (kept alive with it).
class CudnnPlan {
 public:
  CudnnPlan() = default;
  CudnnPlan(CudnnPlan&&) = default;
  CudnnPlan& operator=(CudnnPlan&&) = default;

  std::size_t workspace_bytes() const { return workspace_; }
  std::int64_t engine() const { return engine_; }  // the engine's global index (-1: unknown), for messages
  // Enqueues the plan on the handle's stream: uids[i] is given ptrs[i] (device memory, or host memory for a
  // scalar passed by value); `workspace` holds workspace_bytes() (null when that is 0). One variant pack is
  // made per call: a few host allocations inside cuDNN, no device memory.
  void execute(cudnnHandle_t handle, const std::vector<std::int64_t>& uids, const std::vector<void*>& ptrs,
               void* workspace) const;

 private:
  friend class CudnnGraph;
  const CudnnApi* api_ = nullptr;
  std::string name_;
  std::deque<CudnnDescriptor> keep_;  // tensors, operations, the graph, the engine configuration
  std::unique_ptr<CudnnDescriptor> plan_;
  std::size_t workspace_ = 0;
  std::int64_t engine_ = -1;
};

// An operation graph under construction. Tensors and operations are made (and finalized) as they are added,
// which needs no GPU; plan() needs a handle, so a GPU.
class CudnnGraph {
 public:
  CudnnGraph(const CudnnApi& api, std::string name);

  // A tensor in memory; its uid keys it in the variant pack. Byte alignment 16, as the frontend assumes.
  const CudnnTensor& tensor(const std::string& name, std::int64_t uid, cudnnDataType_t type,
                            std::vector<std::int64_t> dims, std::vector<std::int64_t> strides);
  // A scalar passed by value at execution (a pointer to host memory in the variant pack), [1,1,1,1] like
  // the frontend's fused scalars, which it expands to the rank of the other operand.
  const CudnnTensor& scalar(const std::string& name, std::int64_t uid, cudnnDataType_t type);
  // An intermediate that no memory holds (its uid is the graph's own, from kFirstVirtualUid up).
  const CudnnTensor& virt(const std::string& name, cudnnDataType_t type, std::vector<std::int64_t> dims,
                          std::vector<std::int64_t> strides);

  // c = a b over the last two dims, the leading dims broadcast (a query head's batch over its group's key
  // head); fp32 accumulation (CUDNN_ATTR_MATMUL_COMP_TYPE).
  void matmul(const std::string& name, const CudnnTensor& a, const CudnnTensor& b, const CudnnTensor& c);
  // y = mode(x[, b[, t]]) elementwise with broadcasting, computed in `compute`; axis: GEN_INDEX's (-1: none).
  void pointwise(const std::string& name, cudnnPointwiseMode_t mode, cudnnDataType_t compute,
                 const CudnnTensor& x, const CudnnTensor* b, const CudnnTensor* t, const CudnnTensor& y,
                 std::int64_t axis = -1);
  // y = op(x) over the dims where y has 1 (fp32).
  void reduction(const std::string& name, cudnnReduceTensorOp_t op, const CudnnTensor& x,
                 const CudnnTensor& y);
  // y views x's elements with other dims and strides (the frontend's transposes between products).
  void reshape(const std::string& name, const CudnnTensor& x, const CudnnTensor& y);

  std::size_t operation_count() const { return ops_.size(); }
  const std::string& name() const { return name_; }

  // Finalizes the operation graph on `handle` and takes the first of heuristics mode A's engine
  // configurations that finalizes into a plan needing at most `max_workspace` bytes. Throws naming the
  // graph when cuDNN has no engine for it, or, naming both sizes, when every plan needs more workspace.
  CudnnPlan plan(cudnnHandle_t handle, std::size_t max_workspace) &&;

  static constexpr std::int64_t kFirstVirtualUid = 1000;

 private:
  const CudnnTensor& add_tensor(const std::string& name, CudnnTensor t);
  CudnnDescriptor& keep(cudnnBackendDescriptorType_t type, const std::string& what);

  const CudnnApi* api_;
  std::string name_;
  std::deque<CudnnDescriptor> keep_;
  std::deque<CudnnTensor> tensors_;
  std::vector<cudnnBackendDescriptor_t> ops_;
  std::int64_t next_virtual_uid_ = kFirstVirtualUid;
};

}  // namespace tz::cuda
