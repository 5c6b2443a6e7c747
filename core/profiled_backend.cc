// ProfiledBackend: each call forwarded to the device's own backend, timed when a profile is attached.
// The costs count what a call must read and write at least (activations in their dtype, parameters in
// theirs, fp32 statistics and gradients), the traffic an ideal kernel moves: achieved GB/s against the
// memory's peak says how far a kernel is from its limit.
#include "core/profiled_backend.h"

#include "core/adam_compressed.h"

namespace tz {
namespace {

double sz(DType t) { return double(dtype_size(t)); }

}  // namespace

template <typename F>
void ProfiledBackend::timed(Stream& s, const char* name, OpCost cost, F&& f) {
  if (!profile_) return f();
  const std::size_t token = profile_->begin(s);
  f();
  profile_->end(s, token, name, cost);
}

void ProfiledBackend::gemm(Stream& s, Trans ta, Trans tb, int M, int N, int K, CView A, CView B, View C,
                           Accumulate acc) {
  if (!profile_) return inner_->gemm(s, ta, tb, M, N, K, A, B, C, acc);
  const double m = M, n = N, k = K;
  const OpCost cost{2 * m * n * k, (m * k + k * n) * sz(A.dtype) + m * n * sz(C.dtype) * (acc == Accumulate::yes ? 2 : 1)};
  const std::size_t token = profile_->begin(s);
  inner_->gemm(s, ta, tb, M, N, K, A, B, C, acc);
  profile_->end(s, token, profile_->gemm_name(ta, tb, M, N, K), cost);
}

void ProfiledBackend::add_bias(Stream& s, View out, CView bias, int rows, int cols) {
  const double n = double(rows) * cols;
  timed(s, "bias", {0, 2 * n * sz(out.dtype) + cols * sz(bias.dtype)},
        [&] { inner_->add_bias(s, out, bias, rows, cols); });
}

void ProfiledBackend::bias_backward(Stream& s, float* dbias, CView dout, int rows, int cols) {
  timed(s, "bias.bwd", {0, double(rows) * cols * sz(dout.dtype) + 8.0 * cols},
        [&] { inner_->bias_backward(s, dbias, dout, rows, cols); });
}

void ProfiledBackend::encoder_forward(Stream& s, View out, const std::int32_t* tokens, CView wte, CView wpe, int B,
                                      int T, int C) {
  const double n = double(B) * T * C;
  timed(s, "embedding", {0, n * (sz(out.dtype) + sz(wte.dtype) * (wpe.ptr ? 2 : 1)) + 4.0 * B * T},
        [&] { inner_->encoder_forward(s, out, tokens, wte, wpe, B, T, C); });
}

void ProfiledBackend::encoder_backward(Stream& s, float* dwte, float* dwpe, CView dout, const std::int32_t* tokens,
                                       int B, int T, int C) {
  const double n = double(B) * T * C;
  timed(s, "embedding.bwd", {0, n * (sz(dout.dtype) + 8.0 * (dwpe ? 2 : 1)) + 4.0 * B * T},
        [&] { inner_->encoder_backward(s, dwte, dwpe, dout, tokens, B, T, C); });
}

void ProfiledBackend::layernorm_forward(Stream& s, View out, float* mean, float* rstd, CView inp, CView w, CView b,
                                        int N, int C) {
  timed(s, "layernorm", {0, double(N) * C * (sz(inp.dtype) + sz(out.dtype)) + 8.0 * N + 2.0 * C * sz(w.dtype)},
        [&] { inner_->layernorm_forward(s, out, mean, rstd, inp, w, b, N, C); });
}

void ProfiledBackend::layernorm_backward(Stream& s, View dinp, float* dw, float* db, CView dout, CView inp, CView w,
                                         const float* mean, const float* rstd, int N, int C) {
  timed(s, "layernorm.bwd", {0, double(N) * C * (sz(dout.dtype) + sz(inp.dtype) + 2 * sz(dinp.dtype)) + 8.0 * N},
        [&] { inner_->layernorm_backward(s, dinp, dw, db, dout, inp, w, mean, rstd, N, C); });
}

void ProfiledBackend::gelu_forward(Stream& s, View out, CView inp, std::size_t n) {
  timed(s, "gelu", {0, double(n) * (sz(inp.dtype) + sz(out.dtype))}, [&] { inner_->gelu_forward(s, out, inp, n); });
}

void ProfiledBackend::gelu_backward(Stream& s, View dinp, CView inp, CView dout, std::size_t n) {
  timed(s, "gelu.bwd", {0, double(n) * (sz(inp.dtype) + sz(dout.dtype) + sz(dinp.dtype))},
        [&] { inner_->gelu_backward(s, dinp, inp, dout, n); });
}

void ProfiledBackend::attention_forward(Stream& s, View out, float* saved, float* scratch, CView qkv,
                                        const AttentionShape& a) {
  const double rows = double(a.B) * a.T;
  timed(s, "attention", {attention_forward_flops(a), rows * (a.qkv_width() * sz(qkv.dtype) + a.out_width() * sz(out.dtype))},
        [&] { inner_->attention_forward(s, out, saved, scratch, qkv, a); });
}

void ProfiledBackend::attention_backward(Stream& s, View dqkv, float* scratch, CView dout, CView qkv, CView out,
                                         const float* saved, const AttentionShape& a) {
  const double rows = double(a.B) * a.T;
  timed(s, "attention.bwd",
        {attention_backward_flops(a), rows * (a.qkv_width() * (sz(qkv.dtype) + sz(dqkv.dtype)) +
                                              a.out_width() * (sz(out.dtype) + sz(dout.dtype)))},
        [&] { inner_->attention_backward(s, dqkv, scratch, dout, qkv, out, saved, a); });
}

void ProfiledBackend::rmsnorm_forward(Stream& s, View out, float* rstd, CView inp, CView w, int N, int C, float eps) {
  timed(s, "rmsnorm", {0, double(N) * C * (sz(inp.dtype) + sz(out.dtype)) + 4.0 * N + C * sz(w.dtype)},
        [&] { inner_->rmsnorm_forward(s, out, rstd, inp, w, N, C, eps); });
}

void ProfiledBackend::rmsnorm_backward(Stream& s, View dinp, float* dw, CView dout, CView inp, CView w,
                                       const float* rstd, int N, int C) {
  timed(s, "rmsnorm.bwd", {0, double(N) * C * (sz(dout.dtype) + sz(inp.dtype) + 2 * sz(dinp.dtype)) + 4.0 * N},
        [&] { inner_->rmsnorm_backward(s, dinp, dw, dout, inp, w, rstd, N, C); });
}

void ProfiledBackend::rope(Stream& s, View x, const float* table, int N, int T, int heads, int hd, int stride,
                           bool inverse) {
  timed(s, "rope", {0, 2.0 * N * heads * hd * sz(x.dtype) + 4.0 * T * hd},
        [&] { inner_->rope(s, x, table, N, T, heads, hd, stride, inverse); });
}

void ProfiledBackend::swiglu_forward(Stream& s, View out, CView gate_up, int N, int I) {
  timed(s, "swiglu", {0, double(N) * I * (2 * sz(gate_up.dtype) + sz(out.dtype))},
        [&] { inner_->swiglu_forward(s, out, gate_up, N, I); });
}

void ProfiledBackend::swiglu_backward(Stream& s, View dgate_up, CView gate_up, CView dout, int N, int I) {
  timed(s, "swiglu.bwd", {0, double(N) * I * (2 * sz(gate_up.dtype) + sz(dout.dtype) + 2 * sz(dgate_up.dtype))},
        [&] { inner_->swiglu_backward(s, dgate_up, gate_up, dout, N, I); });
}

void ProfiledBackend::add(Stream& s, View out, CView a, CView b, std::size_t n) {
  timed(s, "add", {0, double(n) * (sz(a.dtype) + sz(b.dtype) + sz(out.dtype))}, [&] { inner_->add(s, out, a, b, n); });
}

void ProfiledBackend::axpy(Stream& s, float* y, float alpha, const float* x, std::size_t n) {
  timed(s, "axpy", {0, 12.0 * n}, [&] { inner_->axpy(s, y, alpha, x, n); });
}

void ProfiledBackend::softmax_xent(Stream& s, float* losses, View logits, const std::int32_t* targets, int N, int V,
                                   int Vp, float dloss) {
  timed(s, "softmax_xent", {0, 2.0 * N * Vp * sz(logits.dtype) + 8.0 * N},
        [&] { inner_->softmax_xent(s, losses, logits, targets, N, V, Vp, dloss); });
}

void ProfiledBackend::cast(Stream& s, void* dst, DType dst_type, const void* src, DType src_type, std::size_t n) {
  timed(s, "cast", {0, double(n) * (sz(dst_type) + sz(src_type))},
        [&] { inner_->cast(s, dst, dst_type, src, src_type, n); });
}

void ProfiledBackend::fill(Stream& s, View x, float value, std::size_t n) {
  timed(s, "fill", {0, double(n) * sz(x.dtype)}, [&] { inner_->fill(s, x, value, n); });
}

void ProfiledBackend::sum(Stream& s, double* acc, const float* x, std::size_t n) {
  timed(s, "reduce", {0, 4.0 * n}, [&] { inner_->sum(s, acc, x, n); });
}

void ProfiledBackend::sum(Stream& s, double* acc, const double* x, std::size_t n) {
  timed(s, "reduce", {0, 8.0 * n}, [&] { inner_->sum(s, acc, x, n); });
}

void ProfiledBackend::sum_squares(Stream& s, double* acc, const float* x, std::size_t n) {
  timed(s, "reduce", {0, 4.0 * n}, [&] { inner_->sum_squares(s, acc, x, n); });
}

void ProfiledBackend::check_finite(Stream& s, double* acc, const float* x, std::size_t n) {
  timed(s, "reduce", {0, 4.0 * n}, [&] { inner_->check_finite(s, acc, x, n); });
}

void ProfiledBackend::adamw(Stream& s, float* p, float* m, float* v, const float* g, std::size_t n,
                            const AdamStep& step, void* working, DType working_type) {
  // p, m, v read and written, g read, the working copy written.
  timed(s, "adamw", {0, double(n) * (28 + (working ? sz(working_type) : 0))},
        [&] { inner_->adamw(s, p, m, v, g, n, step, working, working_type); });
}

void ProfiledBackend::adamw_compressed(Stream& s, const AdamStep& step, const CompressedStates& st,
                                       const float* g, std::size_t n, const ShardPosition& at) {
  // The gradient read, the master and both moments read and written in their formats.
  const double master = st.master == MasterFormat::bf16_sr ? 2 : 4;
  timed(s, "adamw", {0, double(n) * (4 + 2 * (master + 2 * moment_bytes_per_element(st.moments)))},
        [&] { inner_->adamw_compressed(s, step, st, g, n, at); });
}

void ProfiledBackend::copy_async(Stream& s, void* dst, const void* src, std::size_t bytes) {
  timed(s, "copy", {0, double(bytes)}, [&] { inner_->copy_async(s, dst, src, bytes); });
}

void ProfiledBackend::memset_async(Stream& s, void* dst, int value, std::size_t bytes) {
  timed(s, "memset", {0, double(bytes)}, [&] { inner_->memset_async(s, dst, value, bytes); });
}

}  // namespace tz
