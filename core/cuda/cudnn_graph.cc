// cuDNN backend descriptors, operations, plans and execution (see cudnn_graph.h). The attributes each
// descriptor gets are the ones cudnn-frontend sets for the same node (include/cudnn_frontend/node/*.h:
// pointwise.h, matmul.h, reduction.h, reshape.h; cudnn_frontend_Tensor.h, _Heuristics.h, _ExecutionPlan.h,
// _VariantPack.h), without the options the attention graphs do not use.
#include "core/cuda/cudnn_graph.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "core/memory_budget.h"

namespace tz::cuda {
namespace {

void check(const CudnnApi& api, cudnnStatus_t rc, const char* call, const std::string& what) {
  TZ_CHECK_GEN("cuDNN call failed", rc == CUDNN_STATUS_SUCCESS, call, what, ": ", api.describe(rc));
}

std::string dims_text(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

// ---- CudnnDescriptor ----

CudnnDescriptor::CudnnDescriptor(const CudnnApi& api, cudnnBackendDescriptorType_t type, std::string what)
    : api_(&api), what_(std::move(what)) {
  check(api, api.create_descriptor(type, &d_), "cudnnBackendCreateDescriptor", "creating " + what_);
}

CudnnDescriptor::~CudnnDescriptor() {
  if (d_ && api_->destroy_descriptor(d_) != CUDNN_STATUS_SUCCESS)
    log_line("cudnnBackendDestroyDescriptor failed for " + what_);
}

CudnnDescriptor::CudnnDescriptor(CudnnDescriptor&& o) noexcept
    : api_(o.api_), d_(std::exchange(o.d_, nullptr)), what_(std::move(o.what_)) {}

void CudnnDescriptor::set(cudnnBackendAttributeName_t attr, const char* name,
                          cudnnBackendAttributeType_t type, std::int64_t count, const void* values) {
  check(*api_, api_->set_attribute(d_, attr, type, count, values), "cudnnBackendSetAttribute",
        std::string("setting ") + name + " of " + what_);
}

void CudnnDescriptor::set_int64(cudnnBackendAttributeName_t attr, const char* name, std::int64_t v) {
  set(attr, name, CUDNN_TYPE_INT64, 1, &v);
}

void CudnnDescriptor::set_descriptor(cudnnBackendAttributeName_t attr, const char* name,
                                     const CudnnDescriptor& d) {
  cudnnBackendDescriptor_t raw = d.get();
  set(attr, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
}

void CudnnDescriptor::finalize() {
  check(*api_, try_finalize(), "cudnnBackendFinalize", "finalizing " + what_);
}

cudnnStatus_t CudnnDescriptor::try_finalize() { return api_->finalize(d_); }

// ---- CudnnGraph: tensors ----

CudnnGraph::CudnnGraph(const CudnnApi& api, std::string name) : api_(&api), name_(std::move(name)) {}

CudnnDescriptor& CudnnGraph::keep(cudnnBackendDescriptorType_t type, const std::string& what) {
  return keep_.emplace_back(*api_, type, what + " (" + name_ + ")");
}

const CudnnTensor& CudnnGraph::add_tensor(const std::string& name, CudnnTensor t) {
  TZ_CHECK(t.dims.size() == t.strides.size() && !t.dims.empty(), "cuDNN tensor '", name, "' of ", name_,
           ": dims ", dims_text(t.dims), " and strides ", dims_text(t.strides), " differ in rank");
  CudnnDescriptor& d = keep(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor '" + name + "' " + dims_text(t.dims) +
                                                                 " strides " + dims_text(t.strides));
  const std::int64_t rank = std::int64_t(t.dims.size()), alignment = 16;
  d.set(CUDNN_ATTR_TENSOR_DATA_TYPE, "CUDNN_ATTR_TENSOR_DATA_TYPE", CUDNN_TYPE_DATA_TYPE, 1, &t.type);
  d.set(CUDNN_ATTR_TENSOR_DIMENSIONS, "CUDNN_ATTR_TENSOR_DIMENSIONS", CUDNN_TYPE_INT64, rank, t.dims.data());
  d.set(CUDNN_ATTR_TENSOR_STRIDES, "CUDNN_ATTR_TENSOR_STRIDES", CUDNN_TYPE_INT64, rank, t.strides.data());
  d.set_int64(CUDNN_ATTR_TENSOR_UNIQUE_ID, "CUDNN_ATTR_TENSOR_UNIQUE_ID", t.uid);
  d.set_int64(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, "CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT", alignment);
  if (t.is_virtual) {
    const bool yes = true;
    d.set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, "CUDNN_ATTR_TENSOR_IS_VIRTUAL", CUDNN_TYPE_BOOLEAN, 1, &yes);
  }
  if (t.by_value) {
    const bool yes = true;
    d.set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, "CUDNN_ATTR_TENSOR_IS_BY_VALUE", CUDNN_TYPE_BOOLEAN, 1, &yes);
  }
  d.finalize();
  t.desc = &d;
  return tensors_.emplace_back(std::move(t));
}

const CudnnTensor& CudnnGraph::tensor(const std::string& name, std::int64_t uid, cudnnDataType_t type,
                                      std::vector<std::int64_t> dims, std::vector<std::int64_t> strides) {
  TZ_CHECK(uid > 0 && uid < kFirstVirtualUid, "cuDNN tensor '", name, "': uid ", uid, " is not in [1, ",
           kFirstVirtualUid, ")");
  return add_tensor(name, {uid, type, std::move(dims), std::move(strides), false, false, nullptr});
}

const CudnnTensor& CudnnGraph::scalar(const std::string& name, std::int64_t uid, cudnnDataType_t type) {
  TZ_CHECK(uid > 0 && uid < kFirstVirtualUid, "cuDNN scalar '", name, "': uid ", uid, " is not in [1, ",
           kFirstVirtualUid, ")");
  return add_tensor(name, {uid, type, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true, nullptr});
}

const CudnnTensor& CudnnGraph::virt(const std::string& name, cudnnDataType_t type,
                                    std::vector<std::int64_t> dims, std::vector<std::int64_t> strides) {
  return add_tensor(name,
                    {next_virtual_uid_++, type, std::move(dims), std::move(strides), true, false, nullptr});
}

// ---- CudnnGraph: operations (each finalized here, as the frontend's create_cudnn_operations does) ----

void CudnnGraph::matmul(const std::string& name, const CudnnTensor& a, const CudnnTensor& b,
                        const CudnnTensor& c) {
  CudnnDescriptor& desc = keep(CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul descriptor '" + name + "'");
  const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  desc.set(CUDNN_ATTR_MATMUL_COMP_TYPE, "CUDNN_ATTR_MATMUL_COMP_TYPE", CUDNN_TYPE_DATA_TYPE, 1, &comp);
  desc.finalize();
  CudnnDescriptor& op = keep(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "matmul '" + name + "'");
  op.set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_ADESC, "CUDNN_ATTR_OPERATION_MATMUL_ADESC", *a.desc);
  op.set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_BDESC, "CUDNN_ATTR_OPERATION_MATMUL_BDESC", *b.desc);
  op.set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_CDESC, "CUDNN_ATTR_OPERATION_MATMUL_CDESC", *c.desc);
  op.set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_DESC, "CUDNN_ATTR_OPERATION_MATMUL_DESC", desc);
  op.finalize();
  ops_.push_back(op.get());
}

void CudnnGraph::pointwise(const std::string& name, cudnnPointwiseMode_t mode, cudnnDataType_t compute,
                           const CudnnTensor& x, const CudnnTensor* b, const CudnnTensor* t,
                           const CudnnTensor& y, std::int64_t axis) {
  CudnnDescriptor& desc = keep(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise descriptor '" + name + "'");
  desc.set(CUDNN_ATTR_POINTWISE_MODE, "CUDNN_ATTR_POINTWISE_MODE", CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  desc.set(CUDNN_ATTR_POINTWISE_MATH_PREC, "CUDNN_ATTR_POINTWISE_MATH_PREC", CUDNN_TYPE_DATA_TYPE, 1,
           &compute);
  if (mode == CUDNN_POINTWISE_GEN_INDEX)
    desc.set_int64(CUDNN_ATTR_POINTWISE_AXIS, "CUDNN_ATTR_POINTWISE_AXIS", axis);
  desc.finalize();
  CudnnDescriptor& op = keep(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise '" + name + "'");
  op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                    "CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR", desc);
  op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, "CUDNN_ATTR_OPERATION_POINTWISE_XDESC", *x.desc);
  if (b)
    op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, "CUDNN_ATTR_OPERATION_POINTWISE_BDESC", *b->desc);
  if (t)
    op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, "CUDNN_ATTR_OPERATION_POINTWISE_TDESC", *t->desc);
  op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, "CUDNN_ATTR_OPERATION_POINTWISE_YDESC", *y.desc);
  // The frontend always sets both scaling factors to 1.
  const float one = 1.0f;
  op.set(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, "CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1", CUDNN_TYPE_FLOAT, 1,
         &one);
  op.set(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, "CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2", CUDNN_TYPE_FLOAT, 1,
         &one);
  op.finalize();
  ops_.push_back(op.get());
}

void CudnnGraph::reduction(const std::string& name, cudnnReduceTensorOp_t reduce, const CudnnTensor& x,
                           const CudnnTensor& y) {
  CudnnDescriptor& desc = keep(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "reduction descriptor '" + name + "'");
  const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  desc.set(CUDNN_ATTR_REDUCTION_OPERATOR, "CUDNN_ATTR_REDUCTION_OPERATOR", CUDNN_TYPE_REDUCTION_OPERATOR_TYPE,
           1, &reduce);
  desc.set(CUDNN_ATTR_REDUCTION_COMP_TYPE, "CUDNN_ATTR_REDUCTION_COMP_TYPE", CUDNN_TYPE_DATA_TYPE, 1, &comp);
  desc.finalize();
  CudnnDescriptor& op = keep(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "reduction '" + name + "'");
  op.set_descriptor(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, "CUDNN_ATTR_OPERATION_REDUCTION_XDESC", *x.desc);
  op.set_descriptor(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, "CUDNN_ATTR_OPERATION_REDUCTION_YDESC", *y.desc);
  op.set_descriptor(CUDNN_ATTR_OPERATION_REDUCTION_DESC, "CUDNN_ATTR_OPERATION_REDUCTION_DESC", desc);
  op.finalize();
  ops_.push_back(op.get());
}

void CudnnGraph::reshape(const std::string& name, const CudnnTensor& x, const CudnnTensor& y) {
  CudnnDescriptor& op = keep(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, "reshape '" + name + "'");
  op.set_descriptor(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, "CUDNN_ATTR_OPERATION_RESHAPE_XDESC", *x.desc);
  op.set_descriptor(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, "CUDNN_ATTR_OPERATION_RESHAPE_YDESC", *y.desc);
  op.finalize();
  ops_.push_back(op.get());
}

// ---- plans ----

namespace {

// Why no engine may build a graph that is well formed: most often, NVRTC missing ("" when it loads).
std::string no_engine_hint(const CudnnApi& api) {
  const std::string nvrtc = api.nvrtc_problem();
  return nvrtc.empty() ? "" : "; " + nvrtc;
}

// The engine behind a configuration, by its global index (-1 when cuDNN does not say): for messages only.
std::int64_t engine_index(const CudnnApi& api, const CudnnDescriptor& config) {
  try {
    CudnnDescriptor engine(api, CUDNN_BACKEND_ENGINE_DESCRIPTOR, "engine");
    cudnnBackendDescriptor_t raw = engine.get();
    std::int64_t n = 0, index = -1;
    if (api.get_attribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                          &raw) != CUDNN_STATUS_SUCCESS ||
        api.get_attribute(raw, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &index) !=
            CUDNN_STATUS_SUCCESS)
      return -1;
    return index;
  } catch (const Error&) {
    return -1;
  }
}

}  // namespace

CudnnPlan CudnnGraph::plan(cudnnHandle_t handle, std::size_t max_workspace) && {
  TZ_CHECK(!ops_.empty(), "cuDNN graph ", name_, " has no operations");
  CudnnDescriptor& graph = keep(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR,
                                "operation graph of " + std::to_string(ops_.size()) + " operations");
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, "CUDNN_ATTR_OPERATIONGRAPH_OPS", CUDNN_TYPE_BACKEND_DESCRIPTOR,
            std::int64_t(ops_.size()), ops_.data());
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, "CUDNN_ATTR_OPERATIONGRAPH_HANDLE", CUDNN_TYPE_HANDLE, 1,
            &handle);
  graph.finalize();  // cuDNN checks the graph is well formed here

  CudnnDescriptor& heur = keep(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "engine heuristics (mode A)");
  heur.set_descriptor(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, "CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH", graph);
  const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;  // llm.c's and the frontend's default choice
  heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, "CUDNN_ATTR_ENGINEHEUR_MODE", CUDNN_TYPE_HEUR_MODE, 1, &mode);
  heur.finalize();
  std::int64_t count = 0;
  check(*api_,
        api_->get_attribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                            &count, nullptr),
        "cudnnBackendGetAttribute", "counting the engine configurations for " + name_);
  TZ_CHECK(count > 0, "cuDNN ", cudnn_version_text(api_->version()), "'s heuristics offer no engine for ",
           name_, no_engine_hint(*api_));
  std::vector<CudnnDescriptor*> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (std::int64_t i = 0; i < count; ++i) {
    configs.push_back(&keep(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine configuration " + std::to_string(i)));
    raw.push_back(configs.back()->get());
  }
  std::int64_t got = 0;
  check(*api_,
        api_->get_attribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                            &got, raw.data()),
        "cudnnBackendGetAttribute", "reading the engine configurations for " + name_);

  CudnnPlan p;
  std::string first_refusal;
  std::size_t smallest = std::numeric_limits<std::size_t>::max();
  for (std::int64_t i = 0; i < std::min(got, count) && !p.plan_; ++i) {
    auto plan = std::make_unique<CudnnDescriptor>(
        *api_, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR,
        "execution plan of configuration " + std::to_string(i) + " (" + name_ + ")");
    plan->set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, "CUDNN_ATTR_EXECUTION_PLAN_HANDLE", CUDNN_TYPE_HANDLE, 1,
              &handle);
    plan->set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, "CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG",
                         *configs[std::size_t(i)]);
    // A configuration the heuristics offer may still not build here (the frontend's check_support and
    // build_plans skip those too): the next one is tried.
    if (const cudnnStatus_t rc = plan->try_finalize(); rc != CUDNN_STATUS_SUCCESS) {
      if (first_refusal.empty()) first_refusal = api_->describe(rc);
      continue;
    }
    std::int64_t ws = 0, n = 0;
    check(*api_,
          api_->get_attribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                              &ws),
          "cudnnBackendGetAttribute", "reading the workspace size of " + plan->what());
    if (std::size_t(ws) > max_workspace) {
      smallest = std::min(smallest, std::size_t(ws));
      continue;
    }
    p.workspace_ = std::size_t(ws);
    p.engine_ = engine_index(*api_, *configs[std::size_t(i)]);
    p.plan_ = std::move(plan);
  }
  if (!p.plan_ && smallest != std::numeric_limits<std::size_t>::max())
    TZ_FAIL(name_, ": cuDNN's execution plan needs ", smallest, " bytes (", format_bytes(smallest),
            ") of workspace but the attention scratch gives ", max_workspace, " bytes (",
            format_bytes(max_workspace), "); every other configuration of the ", got,
            " offered needs more or does not build");
  if (!p.plan_)
    TZ_FAIL("cuDNN ", cudnn_version_text(api_->version()), " has no engine that builds ", name_,
            ": none of the ", got,
            " configurations heuristics mode A offers finalizes; the first: ", first_refusal,
            no_engine_hint(*api_));
  p.api_ = api_;
  p.name_ = name_;
  p.keep_ = std::move(keep_);
  return p;
}

void CudnnPlan::execute(cudnnHandle_t handle, const std::vector<std::int64_t>& uids,
                        const std::vector<void*>& ptrs, void* workspace) const {
  TZ_CHECK(plan_ && uids.size() == ptrs.size(), "cuDNN plan ", name_, ": ", uids.size(), " uids for ",
           ptrs.size(), " pointers");
  CudnnDescriptor pack(*api_, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack of " + name_);
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, "CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS", CUDNN_TYPE_INT64,
           std::int64_t(uids.size()), uids.data());
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, "CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS",
           CUDNN_TYPE_VOID_PTR, std::int64_t(ptrs.size()), ptrs.data());
  pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, "CUDNN_ATTR_VARIANT_PACK_WORKSPACE", CUDNN_TYPE_VOID_PTR, 1,
           &workspace);
  pack.finalize();
  check(*api_, api_->execute(handle, plan_->get(), pack.get()), "cudnnBackendExecute", "executing " + name_);
}

}  // namespace tz::cuda
