// oneDNN 2.6 (v2 API: matmul::desc + primitive_desc(desc, attr, engine)) matmul with a primitive
// cache keyed by shape, transposes, dtype and accumulation, and the widening of 16-bit inputs where
// oneDNN has no fast kernel for them on this CPU. oneDNN's scratchpad is the caller's (scratchpad_mode
// user): it lives in the planned matmul workspace, so that no product allocates.
#include "core/onednn_gemm.h"

#include <omp.h>

#include <algorithm>
#include <dnnl.hpp>
#include <vector>

#include "core/error.h"

static_assert(DNNL_VERSION_MAJOR == 2, "tierzero uses oneDNN's v2 C++ API (Debian 12's libdnnl-dev 2.6)");

namespace tz {

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

using dnnl::memory;

struct OneDnnGemm::Impl {
  using Key = std::tuple<int, int, int, int, int, int, int, int>;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  struct Prim {
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul matmul;
  };
  std::map<Key, Prim> cache;
  mutable std::mutex mu;
  float* workspace = nullptr;  // the planned matmul workspace
  std::size_t workspace_floats = 0;
  std::vector<float> scratch;  // only when no workspace was given
};

namespace {

memory::data_type to_dnnl(DType t) {
  switch (t) {
    case DType::f32: return memory::data_type::f32;
    case DType::bf16: return memory::data_type::bf16;
    case DType::f16: return memory::data_type::f16;
    default: TZ_FAIL("gemm does not take ", dtype_name(t), " inputs");
  }
}

// The primitive descriptor of one product, its scratchpad the caller's.
dnnl::matmul::primitive_desc product_desc(const dnnl::engine& engine, Trans ta, Trans tb, int M, int N, int K,
                                          DType in, DType out, Accumulate acc) {
  const auto dt = to_dnnl(in);
  // A stored [M,K] (strides K,1) or, transposed, [K,M] (strides 1,M); likewise B.
  memory::dims a_strides = ta == Trans::no ? memory::dims{K, 1} : memory::dims{1, M};
  memory::dims b_strides = tb == Trans::no ? memory::dims{N, 1} : memory::dims{1, K};
  memory::desc a_md({M, K}, dt, a_strides), b_md({K, N}, dt, b_strides), c_md({M, N}, to_dnnl(out), memory::dims{N, 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (acc == Accumulate::yes) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), attr, engine);
}

// Floats of the scratchpad oneDNN asks for a product on this CPU with this process's OpenMP threads (it
// sizes per-thread buffers by them), accumulating or not, rounded up to whole cache lines.
std::size_t scratch_floats(DType in, const GemmShape& s) {
  static std::mutex mu;
  static std::map<std::tuple<int, int, int, int, int, int, int, int>, std::size_t> known;
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const auto key = std::make_tuple(int(s.ta), int(s.tb), s.M, s.N, s.K, int(in), int(s.out), omp_get_max_threads());
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = known.find(key); it != known.end()) return it->second;
  std::size_t bytes = 0;
  for (Accumulate acc : {Accumulate::no, Accumulate::yes})
    bytes = std::max(bytes, product_desc(engine, s.ta, s.tb, s.M, s.N, s.K, in, s.out, acc).scratchpad_desc().get_size());
  return known[key] = (bytes + 63) / 64 * 16;
}

}  // namespace

bool cpu_has_amx_bf16() {
  static const bool amx = __builtin_cpu_supports("amx-bf16");
  return amx;
}

// oneDNN 2.6 runs bf16 matmuls on AVX-512 (avx512_core, with or without the bf16 instructions) and AMX
// only: on an AVX2-only CPU (e.g. some AMD EPYC machines) it has no bf16 matmul at all ("could not
// create a primitive descriptor iterator").
bool cpu_has_onednn_bf16() {
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return ok;
}

namespace {

// Whether oneDNN is given fp32 copies of a product's 16-bit operands (see cpu_gemm_workspace_floats).
bool widened(DType dtype, const GemmShape& s) {
  const std::size_t inputs = std::size_t(s.M) * s.K + std::size_t(s.K) * s.N;
  if (dtype == DType::f16) return true;
  if (dtype != DType::bf16) return false;
  if (!cpu_has_onednn_bf16()) return true;
  const bool transposed = s.ta == Trans::yes || s.tb == Trans::yes;
  return transposed && !cpu_has_amx_bf16() && inputs <= kGemmWidenLimit;
}

}  // namespace

// The widened operands (and a 16-bit C computed in fp32), then the scratchpad of the product oneDNN runs.
std::size_t cpu_gemm_workspace_floats(DType dtype, const GemmShape& s) {
  if (!widened(dtype, s)) return scratch_floats(dtype, s);
  const std::size_t inputs = std::size_t(s.M) * s.K + std::size_t(s.K) * s.N;
  GemmShape wide = s;
  wide.out = DType::f32;
  return inputs + (s.out == DType::f32 ? 0 : std::size_t(s.M) * s.N) + scratch_floats(DType::f32, wide);
}

void OneDnnGemm::set_workspace(float* ws, std::size_t floats) {
  impl_->workspace = ws;
  impl_->workspace_floats = floats;
}

namespace {

// Exact: every bf16 and fp16 value is a float.
template <typename T>
void widen(float* dst, const void* src, std::size_t n) {
  const T* x = static_cast<const T*>(src);
#pragma omp parallel for simd schedule(static)
  for (std::size_t i = 0; i < n; ++i) dst[i] = to_float(x[i]);
}

void widen(float* dst, CView src, std::size_t n) {
  if (src.dtype == DType::f16) return widen<fp16>(dst, src.ptr, n);
  widen<bf16>(dst, src.ptr, n);
}

template <typename T>
void narrow(void* dst, const float* src, std::size_t n) {
  T* y = static_cast<T*>(dst);
#pragma omp parallel for simd schedule(static)
  for (std::size_t i = 0; i < n; ++i) y[i] = from_float<T>(src[i]);
}

}  // namespace

OneDnnGemm::OneDnnGemm() : impl_(std::make_unique<Impl>()) {}
OneDnnGemm::~OneDnnGemm() = default;

std::size_t OneDnnGemm::cached_primitives() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->cache.size();
}

void OneDnnGemm::run(Trans ta, Trans tb, int M, int N, int K, CView A, CView B, View C, Accumulate acc) {
  TZ_CHECK(A.dtype == B.dtype, "gemm inputs must share a dtype, got ", dtype_name(A.dtype), " and ",
           dtype_name(B.dtype));
  TZ_CHECK(C.dtype == DType::f32 || C.dtype == A.dtype, "gemm writes fp32 or its inputs' dtype, not ",
           dtype_name(C.dtype), " from ", dtype_name(A.dtype), " inputs");
  TZ_CHECK(M > 0 && N > 0 && K > 0, "gemm with an empty dimension M=", M, " N=", N, " K=", K);
  const GemmShape shape{ta, tb, M, N, K, C.dtype};
  const std::size_t need = cpu_gemm_workspace_floats(A.dtype, shape);
  float* ws = impl_->workspace;
  if (!ws) {  // outside a planned model
    if (impl_->scratch.size() < need) impl_->scratch.resize(need);
    ws = impl_->scratch.data();
  }
  TZ_CHECK(!impl_->workspace || need <= impl_->workspace_floats, "a ", dtype_name(A.dtype), " matmul [", M, " x ", N,
           " x ", K, "] needs ", need, " floats of workspace, the plan gave ", impl_->workspace_floats,
           "; this is a bug, please report it");
  if (widened(A.dtype, shape)) return run_widened(shape, A, B, C, acc, ws);
  run_product(shape, A, B, C, acc, ws);
}

// One product through its cached primitive, oneDNN's scratchpad at `scratch`.
void OneDnnGemm::run_product(const GemmShape& g, CView A, CView B, View C, Accumulate acc, float* scratch) {
  Impl::Key key{g.M, g.N, g.K, int(g.ta), int(g.tb), int(A.dtype), int(acc), int(C.dtype)};
  Impl::Prim* prim;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->cache.find(key);
    if (it == impl_->cache.end()) {
      const auto pd = product_desc(impl_->engine, g.ta, g.tb, g.M, g.N, g.K, A.dtype, C.dtype, acc);
      it = impl_->cache.emplace(key, Impl::Prim{pd, dnnl::matmul(pd)}).first;
    }
    prim = &it->second;
  }
  memory a_mem(prim->pd.src_desc(), impl_->engine, const_cast<void*>(A.ptr));
  memory b_mem(prim->pd.weights_desc(), impl_->engine, const_cast<void*>(B.ptr));
  memory c_mem(prim->pd.dst_desc(), impl_->engine, C.ptr);
  memory s_mem(prim->pd.scratchpad_desc(), impl_->engine, scratch);
  prim->matmul.execute(impl_->stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem},
                                       {DNNL_ARG_SCRATCHPAD, s_mem}});
  impl_->stream.wait();
}

// The operands widened into the workspace, [A | B | C when 16-bit | the fp32 product's scratchpad], and the
// product run in fp32 there; a 16-bit C is widened first when accumulating, and rounded once at the end.
void OneDnnGemm::run_widened(const GemmShape& g, CView A, CView B, View C, Accumulate acc, float* ws) {
  const std::size_t na = std::size_t(g.M) * g.K, nb = std::size_t(g.K) * g.N, nc = std::size_t(g.M) * g.N;
  widen(ws, A, na);
  widen(ws + na, B, nb);
  float* c = C.dtype == DType::f32 ? static_cast<float*>(C.ptr) : ws + na + nb;
  if (C.dtype != DType::f32 && acc == Accumulate::yes) widen(c, C, nc);
  GemmShape wide = g;
  wide.out = DType::f32;
  run_product(wide, CView(ws), CView(ws + na), View(c), acc, ws + na + nb + (C.dtype == DType::f32 ? 0 : nc));
  if (C.dtype == DType::bf16) narrow<bf16>(C.ptr, c, nc);
  if (C.dtype == DType::f16) narrow<fp16>(C.ptr, c, nc);
}

}  // namespace tz
