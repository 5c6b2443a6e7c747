// The cpu backend: oneDNN matmuls and OpenMP loops over the shared elementwise math, run on the calling
// thread as they are enqueued. Every loop here that reduces is split so each output has one writer (or
// sums fixed chunks in order), so these kernels' results do not depend on the thread count; oneDNN's
// matmul blocking may. Each call opens its device arguments (poison.h) for its duration.
#include <omp.h>

#include <algorithm>
#include <initializer_list>
#include <type_traits>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/adam_compressed.h"
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

// Calls f with an activation view's pointer cast to its element type (float, bf16 or fp16).
template <typename F>
void with_act(View v, const char* op, F&& f) {
  switch (v.dtype) {
    case DType::f32: f(static_cast<float*>(v.ptr)); break;
    case DType::bf16: f(static_cast<bf16*>(v.ptr)); break;
    case DType::f16: f(static_cast<fp16*>(v.ptr)); break;
    default: TZ_FAIL(op, ": activations cannot be ", dtype_name(v.dtype));
  }
}
template <typename F>
void with_act(CView v, const char* op, F&& f) {
  switch (v.dtype) {
    case DType::f32: f(static_cast<const float*>(v.ptr)); break;
    case DType::bf16: f(static_cast<const bf16*>(v.ptr)); break;
    case DType::f16: f(static_cast<const fp16*>(v.ptr)); break;
    default: TZ_FAIL(op, ": activations cannot be ", dtype_name(v.dtype));
  }
}

// Every activation argument of one call holds the run's activation dtype.
void same_dtype(const char* op, DType want, std::initializer_list<CView> views) {
  for (CView v : views)
    TZ_CHECK(v.dtype == want, op, ": activations of one call share a dtype, got ", dtype_name(want), " and ",
             dtype_name(v.dtype));
}

template <typename T>
using Elem = std::remove_cv_t<std::remove_pointer_t<T>>;

// An fp32 view of 16-bit activations: widened into `scratch`, or the fp32 buffer itself.
const float* widened(CView x, float* scratch, std::size_t n) {
  if (x.dtype == DType::f32) return static_cast<const float*>(x.ptr);
  with_act(x, "attention", [&](auto* p) {
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < n; ++i) scratch[i] = to_float(p[i]);
  });
  return scratch;
}

void narrow_into(View y, const float* x, std::size_t n) {
  with_act(y, "attention", [&](auto* p) {
    using T = Elem<decltype(p)>;
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < n; ++i) p[i] = from_float<T>(x[i]);
  });
}

class CpuBackend final : public Backend {
 public:
  void set_gemm_workspace(float* ws, std::size_t floats) override {
    workspace_ = ws;
    gemm_.set_workspace(ws, floats);
  }

  void gemm(Stream&, Trans ta, Trans tb, int M, int N, int K, CView A, CView B, View C, Accumulate acc) override {
    DeviceAccess open{A.ptr, B.ptr, C.ptr, workspace_};
    gemm_.run(ta, tb, M, N, K, A, B, C, acc);
  }

  void add_bias(Stream&, View out, CView bias, int rows, int cols) override {
    DeviceAccess open{out.ptr, bias.ptr};
    with_act(out, "add_bias", [&](auto* o0) {
      using T = Elem<decltype(o0)>;
      with_params(bias, [&](auto* b) {
#pragma omp parallel for schedule(static)
        for (int r = 0; r < rows; ++r) {
          T* o = o0 + std::size_t(r) * cols;
#pragma omp simd
          for (int c = 0; c < cols; ++c) o[c] = from_float<T>(to_float(o[c]) + to_float(b[c]));
        }
      });
    });
  }

  void bias_backward(Stream&, float* dbias, CView dout, int rows, int cols) override {
    DeviceAccess open{dbias, dout.ptr};
    with_act(dout, "bias_backward", [&](auto* d0) {
      constexpr int kBlock = 64;
      int nblocks = (cols + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
      for (int blk = 0; blk < nblocks; ++blk) {
        int c0 = blk * kBlock, c1 = std::min(cols, c0 + kBlock);
        float acc[kBlock] = {};
        for (int r = 0; r < rows; ++r) {
          const auto* d = d0 + std::size_t(r) * cols;
          for (int c = c0; c < c1; ++c) acc[c - c0] += to_float(d[c]);
        }
        for (int c = c0; c < c1; ++c) dbias[c] += acc[c - c0];
      }
    });
  }

  void encoder_forward(Stream&, View out, const std::int32_t* tokens, CView wte, CView wpe, int B, int T,
                       int C) override {
    DeviceAccess open{out.ptr, tokens, wte.ptr, wpe.ptr};
    TZ_CHECK(!wpe.ptr || wte.dtype == wpe.dtype, "wte and wpe must share a dtype");
    with_act(out, "encoder_forward", [&](auto* o0) {
      using A = Elem<decltype(o0)>;
      with_params(wte, [&](auto* te) {
        using P = Elem<decltype(te)>;
        const P* pe = static_cast<const P*>(wpe.ptr);
#pragma omp parallel for schedule(static)
        for (int n = 0; n < B * T; ++n) {
          const P* a = te + std::size_t(tokens[n]) * C;
          A* o = o0 + std::size_t(n) * C;
          if (!pe) {
#pragma omp simd
            for (int c = 0; c < C; ++c) o[c] = from_float<A>(to_float(a[c]));
            continue;
          }
          const P* p = pe + std::size_t(n % T) * C;
#pragma omp simd
          for (int c = 0; c < C; ++c) o[c] = from_float<A>(to_float(a[c]) + to_float(p[c]));
        }
      });
    });
  }

  void encoder_backward(Stream&, float* dwte, float* dwpe, CView dout, const std::int32_t* tokens, int B, int T,
                        int C) override {
    DeviceAccess open{dwte, dwpe, dout.ptr, tokens};
    with_act(dout, "encoder_backward", [&](auto* d0) {
      // Parallel over channel blocks: each (row, channel) of dwte/dwpe has one writer, in row order.
      constexpr int kBlock = 64;
      int nblocks = (C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
      for (int blk = 0; blk < nblocks; ++blk) {
        int c0 = blk * kBlock, c1 = std::min(C, c0 + kBlock);
        for (int n = 0; n < B * T; ++n) {
          const auto* d = d0 + std::size_t(n) * C;
          float* te = dwte + std::size_t(tokens[n]) * C;
          for (int c = c0; c < c1; ++c) te[c] += to_float(d[c]);
          if (!dwpe) continue;
          float* pe = dwpe + std::size_t(n % T) * C;
          for (int c = c0; c < c1; ++c) pe[c] += to_float(d[c]);
        }
      }
    });
  }

  void layernorm_forward(Stream&, View out, float* mean, float* rstd, CView inp, CView w, CView b, int N,
                         int C) override {
    DeviceAccess open{out.ptr, mean, rstd, inp.ptr, w.ptr, b.ptr};
    TZ_CHECK(w.dtype == b.dtype, "layernorm weight and bias must share a dtype");
    same_dtype("layernorm_forward", out.dtype, {inp});
    with_act(out, "layernorm_forward", [&](auto* o0) {
      using A = Elem<decltype(o0)>;
      const A* x0 = static_cast<const A*>(inp.ptr);
      with_params(w, [&](auto* wp) {
        using P = Elem<decltype(wp)>;
        const P* bp = static_cast<const P*>(b.ptr);
#pragma omp parallel for schedule(static)
        for (int n = 0; n < N; ++n) {
          const A* x = x0 + std::size_t(n) * C;
          float m = 0;
#pragma omp simd reduction(+ : m)
          for (int c = 0; c < C; ++c) m += to_float(x[c]);
          m /= float(C);
          float var = 0;
#pragma omp simd reduction(+ : var)
          for (int c = 0; c < C; ++c) var += (to_float(x[c]) - m) * (to_float(x[c]) - m);
          var /= float(C);
          float s = 1.0f / std::sqrt(var + math::kLayerNormEps);
          A* o = o0 + std::size_t(n) * C;
#pragma omp simd
          for (int c = 0; c < C; ++c)
            o[c] = from_float<A>((to_float(x[c]) - m) * s * to_float(wp[c]) + to_float(bp[c]));
          mean[n] = m;
          rstd[n] = s;
        }
      });
    });
  }

  void layernorm_backward(Stream&, View dinp, float* dw, float* db, CView dout, CView inp, CView w,
                          const float* mean, const float* rstd, int N, int C) override {
    DeviceAccess open{dinp.ptr, dw, db, dout.ptr, inp.ptr, w.ptr, mean, rstd};
    same_dtype("layernorm_backward", dinp.dtype, {dout, inp});
    with_act(dinp, "layernorm_backward", [&](auto* di0) {
      using A = Elem<decltype(di0)>;
      const A* d0 = static_cast<const A*>(dout.ptr);
      const A* x0 = static_cast<const A*>(inp.ptr);
      with_params(w, [&](auto* wp) {
#pragma omp parallel for schedule(static)
        for (int n = 0; n < N; ++n) {
          const A* d = d0 + std::size_t(n) * C;
          const A* x = x0 + std::size_t(n) * C;
          float m = mean[n], s = rstd[n];
          float dnorm_mean = 0, dnorm_norm_mean = 0;
#pragma omp simd reduction(+ : dnorm_mean, dnorm_norm_mean)
          for (int c = 0; c < C; ++c) {
            float norm = (to_float(x[c]) - m) * s;
            float dnorm = to_float(wp[c]) * to_float(d[c]);
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * norm;
          }
          dnorm_mean /= float(C);
          dnorm_norm_mean /= float(C);
          A* di = di0 + std::size_t(n) * C;
#pragma omp simd
          for (int c = 0; c < C; ++c) {
            float norm = (to_float(x[c]) - m) * s;
            float dnorm = to_float(wp[c]) * to_float(d[c]);
            di[c] = from_float<A>(to_float(di[c]) + (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s);
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
          const A* d = d0 + std::size_t(n) * C;
          const A* x = x0 + std::size_t(n) * C;
          float m = mean[n], s = rstd[n];
          for (int c = c0; c < c1; ++c) {
            aw[c - c0] += (to_float(x[c]) - m) * s * to_float(d[c]);
            ab[c - c0] += to_float(d[c]);
          }
        }
        for (int c = c0; c < c1; ++c) {
          dw[c] += aw[c - c0];
          db[c] += ab[c - c0];
        }
      }
    });
  }

  void gelu_forward(Stream&, View out, CView inp, std::size_t n) override {
    DeviceAccess open{out.ptr, inp.ptr};
    same_dtype("gelu_forward", out.dtype, {inp});
    with_act(out, "gelu_forward", [&](auto* o) {
      using A = Elem<decltype(o)>;
      const A* x = static_cast<const A*>(inp.ptr);
#pragma omp parallel for simd schedule(static)
      for (std::size_t i = 0; i < n; ++i) o[i] = from_float<A>(math::gelu(to_float(x[i])));
    });
  }

  void gelu_backward(Stream&, View dinp, CView inp, CView dout, std::size_t n) override {
    DeviceAccess open{dinp.ptr, inp.ptr, dout.ptr};
    same_dtype("gelu_backward", dinp.dtype, {inp, dout});
    with_act(dinp, "gelu_backward", [&](auto* di) {
      using A = Elem<decltype(di)>;
      const A* x = static_cast<const A*>(inp.ptr);
      const A* d = static_cast<const A*>(dout.ptr);
#pragma omp parallel for simd schedule(static)
      for (std::size_t i = 0; i < n; ++i) di[i] = from_float<A>(math::gelu_grad(to_float(x[i])) * to_float(d[i]));
    });
  }

  // 16-bit activations are widened into the scratch after the probability gradient (its first
  // B*NH*T*T floats), run through the fp32 loops and rounded once on the way out.
  void attention_forward(Stream&, View out, float* att, float* scratch, CView qkv, const AttentionShape& a) override {
    check_attention(a);
    same_dtype("attention_forward", out.dtype, {qkv});
    const std::size_t rows = std::size_t(a.B) * a.T, nqkv = rows * a.qkv_width(), nout = rows * a.out_width();
    DeviceAccess open{out.ptr, att, qkv.ptr, out.dtype == DType::f32 ? nullptr : scratch};
    if (out.dtype == DType::f32) return cpu::attention_forward(out.as<float>(), att, qkv.as<float>(), a);
    float* wide = scratch + std::size_t(a.B) * a.NH * a.T * a.T;
    const float* q = widened(qkv, wide, nqkv);
    cpu::attention_forward(wide + nqkv, att, q, a);
    narrow_into(out, wide + nqkv, nout);
  }

  void attention_backward(Stream&, View dqkv, float* datt, CView dout, CView qkv, CView out, const float* att,
                          const AttentionShape& a) override {
    check_attention(a);
    same_dtype("attention_backward", dqkv.dtype, {dout, qkv, out});
    const std::size_t rows = std::size_t(a.B) * a.T, nqkv = rows * a.qkv_width(), nout = rows * a.out_width();
    DeviceAccess open{dqkv.ptr, datt, dout.ptr, qkv.ptr, out.ptr, att};
    if (dqkv.dtype == DType::f32)
      return cpu::attention_backward(dqkv.as<float>(), datt, dout.as<float>(), qkv.as<float>(), att, nullptr, a);
    float* wide = datt + std::size_t(a.B) * a.NH * a.T * a.T;
    const float* q = widened(qkv, wide, nqkv);
    const float* o = widened(out, wide + nqkv, nout);
    const float* d = widened(dout, wide + nqkv + nout, nout);
    float* dq = wide + nqkv + 2 * nout;
    cpu::attention_backward(dq, datt, d, q, att, o, a);
    narrow_into(dqkv, dq, nqkv);
  }

  void rmsnorm_forward(Stream&, View out, float* rstd, CView inp, CView w, int N, int C, float eps) override {
    DeviceAccess open{out.ptr, rstd, inp.ptr, w.ptr};
    same_dtype("rmsnorm_forward", out.dtype, {inp});
    with_act(out, "rmsnorm_forward", [&](auto* o0) {
      using A = Elem<decltype(o0)>;
      const A* x0 = static_cast<const A*>(inp.ptr);
      with_params(w, [&](auto* wp) {
#pragma omp parallel for schedule(static)
        for (int n = 0; n < N; ++n) {
          const A* x = x0 + std::size_t(n) * C;
          float ss = 0;
#pragma omp simd reduction(+ : ss)
          for (int c = 0; c < C; ++c) ss += to_float(x[c]) * to_float(x[c]);
          const float r = math::rms_rstd(ss, C, eps);
          A* o = o0 + std::size_t(n) * C;
#pragma omp simd
          for (int c = 0; c < C; ++c) o[c] = from_float<A>(to_float(x[c]) * r * to_float(wp[c]));
          rstd[n] = r;
        }
      });
    });
  }

  void rmsnorm_backward(Stream&, View dinp, float* dw, CView dout, CView inp, CView w, const float* rstd, int N,
                        int C) override {
    DeviceAccess open{dinp.ptr, dw, dout.ptr, inp.ptr, w.ptr, rstd};
    same_dtype("rmsnorm_backward", dinp.dtype, {dout, inp});
    // y = x r w, r = (mean(x^2) + eps)^-1/2: dx = r (dy w) - x r^3 mean(dy w x); dw += dy x r.
    with_act(dinp, "rmsnorm_backward", [&](auto* di0) {
      using A = Elem<decltype(di0)>;
      const A* d0 = static_cast<const A*>(dout.ptr);
      const A* x0 = static_cast<const A*>(inp.ptr);
      with_params(w, [&](auto* wp) {
#pragma omp parallel for schedule(static)
        for (int n = 0; n < N; ++n) {
          const A* d = d0 + std::size_t(n) * C;
          const A* x = x0 + std::size_t(n) * C;
          const float r = rstd[n];
          float dot = 0;
#pragma omp simd reduction(+ : dot)
          for (int c = 0; c < C; ++c) dot += to_float(d[c]) * to_float(wp[c]) * to_float(x[c]);
          const float k = dot / float(C) * r * r * r;
          A* di = di0 + std::size_t(n) * C;
#pragma omp simd
          for (int c = 0; c < C; ++c)
            di[c] = from_float<A>(to_float(di[c]) + (to_float(d[c]) * to_float(wp[c]) * r - to_float(x[c]) * k));
        }
      });
      constexpr int kBlock = 64;
      const int nblocks = (C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
      for (int blk = 0; blk < nblocks; ++blk) {
        const int c0 = blk * kBlock, c1 = std::min(C, c0 + kBlock);
        float aw[kBlock] = {};
        for (int n = 0; n < N; ++n) {
          const A* d = d0 + std::size_t(n) * C;
          const A* x = x0 + std::size_t(n) * C;
          const float r = rstd[n];
          for (int c = c0; c < c1; ++c) aw[c - c0] += to_float(d[c]) * to_float(x[c]) * r;
        }
        for (int c = c0; c < c1; ++c) dw[c] += aw[c - c0];
      }
    });
  }

  void rope(Stream&, View x, const float* table, int N, int T, int heads, int hd, int stride, bool inverse) override {
    DeviceAccess open{x.ptr, table};
    const int half = hd / 2;
    const float* sin_table = table + std::size_t(T) * half;
    with_act(x, "rope", [&](auto* x0) {
      using A = Elem<decltype(x0)>;
#pragma omp parallel for schedule(static)
      for (int n = 0; n < N; ++n) {
        const int t = n % T;
        const float* c = table + std::size_t(t) * half;
        const float* sn = sin_table + std::size_t(t) * half;
        for (int h = 0; h < heads; ++h) {
          A* p = x0 + std::size_t(n) * stride + std::size_t(h) * hd;
#pragma omp simd
          for (int i = 0; i < half; ++i) {
            float a = to_float(p[i]), b = to_float(p[i + half]);
            math::rope_rotate(a, b, c[i], inverse ? -sn[i] : sn[i]);
            p[i] = from_float<A>(a);
            p[i + half] = from_float<A>(b);
          }
        }
      }
    });
  }

  void swiglu_forward(Stream&, View out, CView gate_up, int N, int I) override {
    DeviceAccess open{out.ptr, gate_up.ptr};
    same_dtype("swiglu_forward", out.dtype, {gate_up});
    with_act(out, "swiglu_forward", [&](auto* o0) {
      using A = Elem<decltype(o0)>;
      const A* g0 = static_cast<const A*>(gate_up.ptr);
#pragma omp parallel for schedule(static)
      for (int n = 0; n < N; ++n) {
        const A* g = g0 + std::size_t(n) * 2 * I;
        A* o = o0 + std::size_t(n) * I;
#pragma omp simd
        for (int i = 0; i < I; ++i) o[i] = from_float<A>(math::swiglu(to_float(g[i]), to_float(g[I + i])));
      }
    });
  }

  void swiglu_backward(Stream&, View dgate_up, CView gate_up, CView dout, int N, int I) override {
    DeviceAccess open{dgate_up.ptr, gate_up.ptr, dout.ptr};
    same_dtype("swiglu_backward", dgate_up.dtype, {gate_up, dout});
    with_act(dgate_up, "swiglu_backward", [&](auto* dg0) {
      using A = Elem<decltype(dg0)>;
      const A* g0 = static_cast<const A*>(gate_up.ptr);
      const A* d0 = static_cast<const A*>(dout.ptr);
#pragma omp parallel for schedule(static)
      for (int n = 0; n < N; ++n) {
        const A* g = g0 + std::size_t(n) * 2 * I;
        const A* d = d0 + std::size_t(n) * I;
        A* dg = dg0 + std::size_t(n) * 2 * I;
#pragma omp simd
        for (int i = 0; i < I; ++i) {
          float dgate, dup;
          math::swiglu_grad(to_float(g[i]), to_float(g[I + i]), to_float(d[i]), dgate, dup);
          dg[i] = from_float<A>(dgate);
          dg[I + i] = from_float<A>(dup);
        }
      }
    });
  }

  void add(Stream&, View out, CView a, CView b, std::size_t n) override {
    DeviceAccess open{out.ptr, a.ptr, b.ptr};
    same_dtype("add", out.dtype, {a, b});
    with_act(out, "add", [&](auto* o) {
      using A = Elem<decltype(o)>;
      const A* x = static_cast<const A*>(a.ptr);
      const A* y = static_cast<const A*>(b.ptr);
#pragma omp parallel for simd schedule(static)
      for (std::size_t i = 0; i < n; ++i) o[i] = from_float<A>(to_float(x[i]) + to_float(y[i]));
    });
  }

  void axpy(Stream&, float* y, float alpha, const float* x, std::size_t n) override {
    DeviceAccess open{y, x};
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < n; ++i) y[i] += alpha * x[i];
  }

  // fp32 logits keep the loops they always had (their bits); 16-bit logits are read in fp32 three times
  // (max, sum, gradient) and each gradient is rounded once.
  void softmax_xent(Stream&, float* losses, View logits, const std::int32_t* targets, int N, int V, int Vp,
                    float dloss) override {
    DeviceAccess open{losses, logits.ptr, targets};
    if (logits.dtype == DType::f32) return softmax_xent_f32(losses, logits.as<float>(), targets, N, V, Vp, dloss);
    with_act(logits, "softmax_xent", [&](auto* l0) {
      using A = Elem<decltype(l0)>;
#pragma omp parallel for schedule(static)
      for (int n = 0; n < N; ++n) {
        A* row = l0 + std::size_t(n) * Vp;
        const int tgt = targets[n];
        const float target_logit = to_float(row[tgt]);
        float mx = -INFINITY;
        for (int v = 0; v < V; ++v) mx = std::max(mx, to_float(row[v]));
        float sum = 0;
        for (int v = 0; v < V; ++v) sum += math::exp_f(to_float(row[v]) - mx);
        const float inv = 1.0f / sum;
        losses[n] = (mx - target_logit) + std::log(sum);
        for (int v = 0; v < V; ++v)
          row[v] = from_float<A>(math::exp_f(to_float(row[v]) - mx) * inv * dloss - (v == tgt ? dloss : 0.0f));
        for (int v = V; v < Vp; ++v) row[v] = from_float<A>(0.0f);
      }
    });
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

  void fill(Stream&, View x, float value, std::size_t n) override {
    DeviceAccess open{x.ptr};
    with_act(x, "fill", [&](auto* p) {
      using A = Elem<decltype(p)>;
      const A v = from_float<A>(value);
#pragma omp parallel for simd schedule(static)
      for (std::size_t i = 0; i < n; ++i) p[i] = v;
    });
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

  void adamw_compressed(Stream&, const AdamStep& step, const CompressedStates& st, const float* g, std::size_t n,
                        const ShardPosition& at) override {
    DeviceAccess open{st.p, st.m, st.v, st.m_absmax, st.v_absmax, g};
    tz::adamw_compressed(cpu_adam_isa_choice(), step, st, g, n, at);
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
  static void softmax_xent_f32(float* losses, float* logits, const std::int32_t* targets, int N, int V, int Vp,
                               float dloss) {
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
