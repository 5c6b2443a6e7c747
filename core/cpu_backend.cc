// The cpu backend: oneDNN matmuls and OpenMP loops over the shared elementwise math, run on the calling
// thread as they are enqueued. Every loop here that reduces is split so each output has one writer (or
// sums fixed chunks in order), so these kernels' results do not depend on the thread count; oneDNN's
// matmul blocking may. Each call opens its device arguments (poison.h) for its duration.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/backend.h"
#include "core/cpu_adam.h"
#include "core/cpu_attention.h"
#include "core/elementwise.h"
#include "core/error.h"
#include "core/host_ops.h"
#include "core/onednn_gemm.h"
#include "core/poison.h"

namespace tz {
namespace {

// Calls f with the view's pointer cast to its element type.
template <typename F>
void with_params(CView v, F&& f) {
  switch (v.dtype) {
    case DType::f32: f(static_cast<const float*>(v.ptr)); break;
    case DType::bf16: f(static_cast<const bf16*>(v.ptr)); break;
    case DType::f16: f(static_cast<const fp16*>(v.ptr)); break;
    default: TZ_FAIL("parameters cannot be ", dtype_name(v.dtype));
  }
}

template <typename D, typename S>
void cast_loop(D* dst, const S* src, std::size_t n) {
#pragma omp parallel for simd schedule(static)
  for (std::size_t i = 0; i < n; ++i) dst[i] = from_float<D>(to_float(src[i]));
}

template <typename S>
void cast_from(void* dst, DType dt, const S* src, std::size_t n) {
  switch (dt) {
    case DType::f32: cast_loop(static_cast<float*>(dst), src, n); break;
    case DType::bf16: cast_loop(static_cast<bf16*>(dst), src, n); break;
    case DType::f16: cast_loop(static_cast<fp16*>(dst), src, n); break;
    default: TZ_FAIL("cannot cast to ", dtype_name(dt));
  }
}

class CpuBackend final : public Backend {
 public:
  void set_gemm_workspace(float* ws, std::size_t floats) override {
    workspace_ = ws;
    gemm_.set_workspace(ws, floats);
  }

  void gemm(Stream&, Trans ta, Trans tb, int M, int N, int K, CView A, CView B, float* C, Accumulate acc) override {
    DeviceAccess open{A.ptr, B.ptr, C, workspace_};
    gemm_.run(ta, tb, M, N, K, A, B, C, acc);
  }

  void add_bias(Stream&, float* out, CView bias, int rows, int cols) override {
    DeviceAccess open{out, bias.ptr};
    with_params(bias, [&](auto* b) {
#pragma omp parallel for schedule(static)
      for (int r = 0; r < rows; ++r) {
        float* o = out + std::size_t(r) * cols;
#pragma omp simd
        for (int c = 0; c < cols; ++c) o[c] += to_float(b[c]);
      }
    });
  }

  void bias_backward(Stream&, float* dbias, const float* dout, int rows, int cols) override {
    DeviceAccess open{dbias, dout};
    constexpr int kBlock = 64;
    int nblocks = (cols + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblocks; ++blk) {
      int c0 = blk * kBlock, c1 = std::min(cols, c0 + kBlock);
      float acc[kBlock] = {};
      for (int r = 0; r < rows; ++r) {
        const float* d = dout + std::size_t(r) * cols;
        for (int c = c0; c < c1; ++c) acc[c - c0] += d[c];
      }
      for (int c = c0; c < c1; ++c) dbias[c] += acc[c - c0];
    }
  }

  void encoder_forward(Stream&, float* out, const std::int32_t* tokens, CView wte, CView wpe, int B, int T, int C) override {
    DeviceAccess open{out, tokens, wte.ptr, wpe.ptr};
    TZ_CHECK(!wpe.ptr || wte.dtype == wpe.dtype, "wte and wpe must share a dtype");
    with_params(wte, [&](auto* te) {
      using P = std::remove_cv_t<std::remove_pointer_t<decltype(te)>>;
      const P* pe = static_cast<const P*>(wpe.ptr);
#pragma omp parallel for schedule(static)
      for (int n = 0; n < B * T; ++n) {
        const P* a = te + std::size_t(tokens[n]) * C;
        float* o = out + std::size_t(n) * C;
        if (!pe) {
#pragma omp simd
          for (int c = 0; c < C; ++c) o[c] = to_float(a[c]);
          continue;
        }
        const P* p = pe + std::size_t(n % T) * C;
#pragma omp simd
        for (int c = 0; c < C; ++c) o[c] = to_float(a[c]) + to_float(p[c]);
      }
    });
  }

  void encoder_backward(Stream&, float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens, int B, int T,
                        int C) override {
    DeviceAccess open{dwte, dwpe, dout, tokens};
    // Parallel over channel blocks: each (row, channel) of dwte/dwpe has one writer, in row order.
    constexpr int kBlock = 64;
    int nblocks = (C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblocks; ++blk) {
      int c0 = blk * kBlock, c1 = std::min(C, c0 + kBlock);
      for (int n = 0; n < B * T; ++n) {
        const float* d = dout + std::size_t(n) * C;
        float* te = dwte + std::size_t(tokens[n]) * C;
        for (int c = c0; c < c1; ++c) te[c] += d[c];
        if (!dwpe) continue;
        float* pe = dwpe + std::size_t(n % T) * C;
        for (int c = c0; c < c1; ++c) pe[c] += d[c];
      }
    }
  }

  void layernorm_forward(Stream&, float* out, float* mean, float* rstd, const float* inp, CView w, CView b, int N,
                         int C) override {
    DeviceAccess open{out, mean, rstd, inp, w.ptr, b.ptr};
    TZ_CHECK(w.dtype == b.dtype, "layernorm weight and bias must share a dtype");
    with_params(w, [&](auto* wp) {
      using P = std::remove_cv_t<std::remove_pointer_t<decltype(wp)>>;
      const P* bp = static_cast<const P*>(b.ptr);
#pragma omp parallel for schedule(static)
      for (int n = 0; n < N; ++n) {
        const float* x = inp + std::size_t(n) * C;
        float m = 0;
#pragma omp simd reduction(+ : m)
        for (int c = 0; c < C; ++c) m += x[c];
        m /= float(C);
        float var = 0;
#pragma omp simd reduction(+ : var)
        for (int c = 0; c < C; ++c) var += (x[c] - m) * (x[c] - m);
        var /= float(C);
        float s = 1.0f / std::sqrt(var + math::kLayerNormEps);
        float* o = out + std::size_t(n) * C;
#pragma omp simd
        for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * to_float(wp[c]) + to_float(bp[c]);
        mean[n] = m;
        rstd[n] = s;
      }
    });
  }

  void layernorm_backward(Stream&, float* dinp, float* dw, float* db, const float* dout, const float* inp, CView w,
                          const float* mean, const float* rstd, int N, int C) override {
    DeviceAccess open{dinp, dw, db, dout, inp, w.ptr, mean, rstd};
    with_params(w, [&](auto* wp) {
#pragma omp parallel for schedule(static)
      for (int n = 0; n < N; ++n) {
        const float* d = dout + std::size_t(n) * C;
        const float* x = inp + std::size_t(n) * C;
        float m = mean[n], s = rstd[n];
        float dnorm_mean = 0, dnorm_norm_mean = 0;
#pragma omp simd reduction(+ : dnorm_mean, dnorm_norm_mean)
        for (int c = 0; c < C; ++c) {
          float norm = (x[c] - m) * s;
          float dnorm = to_float(wp[c]) * d[c];
          dnorm_mean += dnorm;
          dnorm_norm_mean += dnorm * norm;
        }
        dnorm_mean /= float(C);
        dnorm_norm_mean /= float(C);
        float* di = dinp + std::size_t(n) * C;
#pragma omp simd
        for (int c = 0; c < C; ++c) {
          float norm = (x[c] - m) * s;
          float dnorm = to_float(wp[c]) * d[c];
          di[c] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
        }
      }
    });
    constexpr int kBlock = 64;
    int nblocks = (C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblocks; ++blk) {
      int c0 = blk * kBlock, c1 = std::min(C, c0 + kBlock);
      float aw[kBlock] = {}, ab[kBlock] = {};
      for (int n = 0; n < N; ++n) {
        const float* d = dout + std::size_t(n) * C;
        const float* x = inp + std::size_t(n) * C;
        float m = mean[n], s = rstd[n];
        for (int c = c0; c < c1; ++c) {
          aw[c - c0] += (x[c] - m) * s * d[c];
          ab[c - c0] += d[c];
        }
      }
      for (int c = c0; c < c1; ++c) {
        dw[c] += aw[c - c0];
        db[c] += ab[c - c0];
      }
    }
  }

  void gelu_forward(Stream&, float* out, const float* inp, std::size_t n) override {
    DeviceAccess open{out, inp};
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < n; ++i) out[i] = math::gelu(inp[i]);
  }

  void gelu_backward(Stream&, float* dinp, const float* inp, const float* dout, std::size_t n) override {
    DeviceAccess open{dinp, inp, dout};
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < n; ++i) dinp[i] = math::gelu_grad(inp[i]) * dout[i];
  }

  void attention_forward(Stream&, float* out, float* att, const float* qkv, const AttentionShape& a) override {
    check_attention(a);
    DeviceAccess open{out, att, qkv};
    cpu::attention_forward(out, att, qkv, a);
  }

  void attention_backward(Stream&, float* dqkv, float* datt, const float* dout, const float* qkv, const float*,
                          const float* att, const AttentionShape& a) override {
    check_attention(a);
    DeviceAccess open{dqkv, datt, dout, qkv, att};
    cpu::attention_backward(dqkv, datt, dout, qkv, att, a);
  }

  void rmsnorm_forward(Stream&, float* out, float* rstd, const float* inp, CView w, int N, int C, float eps) override {
    DeviceAccess open{out, rstd, inp, w.ptr};
    with_params(w, [&](auto* wp) {
#pragma omp parallel for schedule(static)
      for (int n = 0; n < N; ++n) {
        const float* x = inp + std::size_t(n) * C;
        float ss = 0;
#pragma omp simd reduction(+ : ss)
        for (int c = 0; c < C; ++c) ss += x[c] * x[c];
        const float r = math::rms_rstd(ss, C, eps);
        float* o = out + std::size_t(n) * C;
#pragma omp simd
        for (int c = 0; c < C; ++c) o[c] = x[c] * r * to_float(wp[c]);
        rstd[n] = r;
      }
    });
  }

  void rmsnorm_backward(Stream&, float* dinp, float* dw, const float* dout, const float* inp, CView w,
                        const float* rstd, int N, int C) override {
    DeviceAccess open{dinp, dw, dout, inp, w.ptr, rstd};
    // y = x r w, r = (mean(x^2) + eps)^-1/2: dx = r (dy w) - x r^3 mean(dy w x); dw += dy x r.
    with_params(w, [&](auto* wp) {
#pragma omp parallel for schedule(static)
      for (int n = 0; n < N; ++n) {
        const float* d = dout + std::size_t(n) * C;
        const float* x = inp + std::size_t(n) * C;
        const float r = rstd[n];
        float dot = 0;
#pragma omp simd reduction(+ : dot)
        for (int c = 0; c < C; ++c) dot += d[c] * to_float(wp[c]) * x[c];
        const float k = dot / float(C) * r * r * r;
        float* di = dinp + std::size_t(n) * C;
#pragma omp simd
        for (int c = 0; c < C; ++c) di[c] += d[c] * to_float(wp[c]) * r - x[c] * k;
      }
    });
    constexpr int kBlock = 64;
    const int nblocks = (C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblocks; ++blk) {
      const int c0 = blk * kBlock, c1 = std::min(C, c0 + kBlock);
      float aw[kBlock] = {};
      for (int n = 0; n < N; ++n) {
        const float* d = dout + std::size_t(n) * C;
        const float* x = inp + std::size_t(n) * C;
        const float r = rstd[n];
        for (int c = c0; c < c1; ++c) aw[c - c0] += d[c] * x[c] * r;
      }
      for (int c = c0; c < c1; ++c) dw[c] += aw[c - c0];
    }
  }

  void rope(Stream&, float* x, const float* table, int N, int T, int heads, int hd, int stride, bool inverse) override {
    DeviceAccess open{x, table};
    const int half = hd / 2;
    const float* sin_table = table + std::size_t(T) * half;
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) {
      const int t = n % T;
      const float* c = table + std::size_t(t) * half;
      const float* sn = sin_table + std::size_t(t) * half;
      for (int h = 0; h < heads; ++h) {
        float* p = x + std::size_t(n) * stride + std::size_t(h) * hd;
#pragma omp simd
        for (int i = 0; i < half; ++i) math::rope_rotate(p[i], p[i + half], c[i], inverse ? -sn[i] : sn[i]);
      }
    }
  }

  void swiglu_forward(Stream&, float* out, const float* gate_up, int N, int I) override {
    DeviceAccess open{out, gate_up};
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) {
      const float* g = gate_up + std::size_t(n) * 2 * I;
      float* o = out + std::size_t(n) * I;
#pragma omp simd
      for (int i = 0; i < I; ++i) o[i] = math::swiglu(g[i], g[I + i]);
    }
  }

  void swiglu_backward(Stream&, float* dgate_up, const float* gate_up, const float* dout, int N, int I) override {
    DeviceAccess open{dgate_up, gate_up, dout};
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) {
      const float* g = gate_up + std::size_t(n) * 2 * I;
      const float* d = dout + std::size_t(n) * I;
      float* dg = dgate_up + std::size_t(n) * 2 * I;
#pragma omp simd
      for (int i = 0; i < I; ++i) math::swiglu_grad(g[i], g[I + i], d[i], dg[i], dg[I + i]);
    }
  }

  void add(Stream&, float* out, const float* a, const float* b, std::size_t n) override {
    DeviceAccess open{out, a, b};
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
  }

  void axpy(Stream&, float* y, float alpha, const float* x, std::size_t n) override {
    DeviceAccess open{y, x};
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < n; ++i) y[i] += alpha * x[i];
  }

  void softmax_xent(Stream&, float* losses, float* logits, const std::int32_t* targets, int N, int V, int Vp,
                    float dloss) override {
    DeviceAccess open{losses, logits, targets};
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) {
      float* row = logits + std::size_t(n) * Vp;
      int tgt = targets[n];
      const float target_logit = row[tgt];
      float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
      for (int v = 0; v < V; ++v) mx = std::max(mx, row[v]);
      float sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int v = 0; v < V; ++v) {
        float e = math::exp_f(row[v] - mx);
        row[v] = e;
        sum += e;
      }
      float inv = 1.0f / sum;
      // log-sum-exp, not -log(p): p = e^(x_t - max) underflows to 0 (loss Inf) once the target's
      // logit is ~100 below the maximum, while the loss itself is an ordinary number.
      losses[n] = (mx - target_logit) + std::log(sum);
#pragma omp simd
      for (int v = 0; v < V; ++v) row[v] = row[v] * inv * dloss;
      row[tgt] -= dloss;
      for (int v = V; v < Vp; ++v) row[v] = 0;
    }
  }

  void cast(Stream&, void* dst, DType dt, const void* src, DType st, std::size_t n) override {
    DeviceAccess open{dst, src};
    switch (st) {
      case DType::f32: cast_from(dst, dt, static_cast<const float*>(src), n); break;
      case DType::bf16: cast_from(dst, dt, static_cast<const bf16*>(src), n); break;
      case DType::f16: cast_from(dst, dt, static_cast<const fp16*>(src), n); break;
      default: TZ_FAIL("cannot cast from ", dtype_name(st));
    }
  }

  void fill(Stream&, float* x, float value, std::size_t n) override {
    DeviceAccess open{x};
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < n; ++i) x[i] = value;
  }

  void sum(Stream&, double* acc, const float* x, std::size_t n) override {
    DeviceAccess open{acc, x};
    acc[0] += host_sum(x, n);
  }

  void sum(Stream&, double* acc, const double* x, std::size_t n) override {
    DeviceAccess open{acc, x};
    double t = acc[0];
    for (std::size_t i = 0; i < n; ++i) t += x[i];
    acc[0] = t;
  }

  void sum_squares(Stream&, double* acc, const float* x, std::size_t n) override {
    DeviceAccess open{acc, x};
    acc[0] += host_sum_squares(x, n);
  }

  void check_finite(Stream&, double* acc, const float* x, std::size_t n) override {
    DeviceAccess open{acc, x};
    if (!host_all_finite(x, n)) acc[0] = std::numeric_limits<double>::quiet_NaN();
  }

  void adamw(Stream&, float* p, float* m, float* v, const float* g, std::size_t n, const AdamStep& step,
             void* working, DType wt) override {
    DeviceAccess open{p, m, v, g, working};
    cpu_adamw(p, m, v, g, n, step, working, wt);
  }

  void copy_async(Stream&, void* dst, const void* src, std::size_t bytes) override {
    if (!bytes) return;
    DeviceAccess open{dst, src};
    std::memcpy(dst, src, bytes);
  }

  void memset_async(Stream&, void* dst, int value, std::size_t bytes) override {
    if (!bytes) return;
    DeviceAccess open{dst};
    std::memset(dst, value, bytes);
  }

 private:
  static void check_attention(const AttentionShape& a) {
    TZ_CHECK(a.B >= 0 && a.T >= 0 && a.hd > 0 && a.KVH > 0 && a.NH % a.KVH == 0, "attention: ", a.NH,
             " query heads cannot share ", a.KVH, " key-value heads of ", a.hd);
  }

  OneDnnGemm gemm_;
  float* workspace_ = nullptr;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace tz
