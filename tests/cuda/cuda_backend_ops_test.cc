// Tests the cuda backend (core/cuda/cuda_backend.h) against the cpu backend the way ggml's test-backend-ops
// does: one table of operations, each at several shapes, run through Backend's table on a cuda device and
// on a cpu device (make_cpu_device) with the same 16-bit activations (bf16, then fp16) and parameters of
// that dtype, every output compared element by element within a tolerance stated with its case, and the
// cuda results bitwise equal to themselves on a second run. fp32 activations are checked bit for bit per
// kernel family in the other tests here. The argument checks run without a GPU; the rest skips without one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/backend.h"
#include "core/cuda/attention_math.h"
#include "core/cuda/cuda_device.h"
#include "core/cuda/cuda_runtime.h"
#include "core/cuda/kernels.h"
#include "core/cuda/launch_config.h"
#include "core/device.h"
#include "tests/common/random.h"
#include "tests/cuda/kernel_test_util.h"

namespace tz {
namespace {

// Host values of every input of a case, by argument name, as the kernels read them (rounded to the
// argument's dtype; int32 ones as floats).
using Values = std::map<std::string, std::vector<float>>;
using Bytes = std::vector<std::uint8_t>;

// One ulp of a dtype relative to a value's magnitude, at most: a value in [2^e, 2^(e+1)) has an ulp of
// 2^(e - mantissa bits).
double ulp_rel(DType t) { return t == DType::bf16 ? 0x1p-7 : t == DType::f16 ? 0x1p-10 : 0x1p-23; }
// The spacing of a dtype's subnormals (fp16's are coarse enough to matter: 6e-8).
double subnormal_step(DType t) { return t == DType::f16 ? 0x1p-24 : 0.0; }

// How far an output may be from the cpu backend's:
//   |got - want| <= (ulps * ulp_rel(dtype) + rel) * max(|got|, |want|) + abs + each[i] (+ one subnormal step
// with ulps). `ulps`: the roundings to the output's dtype (1: both backends compute an fp32 value and round
// it once; two fp32 values a hair apart may round to neighbours). `rel`, `abs`: how far the fp32 values
// themselves may differ (sums in another order). `each`: per element, from the inputs (sums of magnitudes).
struct Tolerance {
  double ulps = 0, rel = 0, abs = 0;
  std::function<std::vector<double>(const Values&)> each;
};

// Identical fp32 arithmetic on both backends (core/elementwise.h's functions, no FMA contraction), then
// one rounding: the same bits are expected, one ulp is allowed.
Tolerance rounded_once(double rel = 0, double abs = 0) { return {1, rel, abs, nullptr}; }
Tolerance fp32_sum(double rel, double abs) { return {0, rel, abs, nullptr}; }

enum class Role { in, out, inout, scratch };

struct Arg {
  std::string name;
  DType dtype = DType::f32;
  std::size_t n = 0;
  Role role = Role::in;
  double lo = -1, hi = 1;  // in, inout: uniform values (int32: integers in [lo, hi))
  Tolerance tol;           // out, inout
  std::function<std::size_t(DeviceKind)> scratch_floats;  // scratch: fp32, as many as the device asks for
};

Arg in(std::string name, DType t, std::size_t n, double lo = -1, double hi = 1) {
  return {std::move(name), t, n, Role::in, lo, hi, {}, nullptr};
}
Arg out(std::string name, DType t, std::size_t n, Tolerance tol) {
  return {std::move(name), t, n, Role::out, 0, 0, std::move(tol), nullptr};
}
Arg inout(std::string name, DType t, std::size_t n, Tolerance tol, double lo = -1, double hi = 1) {
  return {std::move(name), t, n, Role::inout, lo, hi, std::move(tol), nullptr};
}
Arg scratch(std::string name, std::function<std::size_t(DeviceKind)> floats) {
  return {std::move(name), DType::f32, 0, Role::scratch, 0, 0, {}, std::move(floats)};
}

// A case's buffers on one device, by argument name. checkpoint(name): the output compared at this point;
// the run under test then carries on from the cpu backend's value of it (so a later step is compared on
// the same inputs, not on the first step's roundings).
struct Bufs {
  std::map<std::string, View> views;
  std::function<void(const std::string&)> checkpoint;
  View operator[](const std::string& name) const { return views.at(name); }
  float* f32(const std::string& name) const { return static_cast<float*>(views.at(name).ptr); }
  const std::int32_t* i32(const std::string& name) const {
    return static_cast<const std::int32_t*>(views.at(name).ptr);
  }
};

struct OpCase {
  std::string family, name;
  std::vector<Arg> args;
  std::function<void(Backend&, Stream&, Bufs&)> run;
  std::function<void(Values&)> prepare = nullptr;  // makes inputs consistent (statistics, padding, tables)
  cuda::Attention attention = cuda::Attention::fp32;
};

// The bytes of v in dtype t (each value rounded to nearest even), and v replaced by what they hold.
Bytes encode(std::vector<float>& v, DType t) {
  Bytes b(v.size() * dtype_size(t));
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::uint8_t* at = b.data() + i * dtype_size(t);
    if (t == DType::bf16) {
      const bf16 h = float_to_bf16(v[i]);
      v[i] = bf16_to_float(h);
      std::memcpy(at, &h, 2);
    } else if (t == DType::f16) {
      const fp16 h = float_to_fp16(v[i]);
      v[i] = fp16_to_float(h);
      std::memcpy(at, &h, 2);
    } else if (t == DType::i32) {
      const std::int32_t k = std::int32_t(v[i]);
      std::memcpy(at, &k, 4);
    } else {
      std::memcpy(at, &v[i], 4);
    }
  }
  return b;
}

std::vector<float> decode(const Bytes& b, DType t) {
  std::vector<float> v(b.size() / dtype_size(t));
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::uint8_t* at = b.data() + i * dtype_size(t);
    if (t == DType::bf16) {
      bf16 h;
      std::memcpy(&h, at, 2);
      v[i] = bf16_to_float(h);
    } else if (t == DType::f16) {
      fp16 h;
      std::memcpy(&h, at, 2);
      v[i] = fp16_to_float(h);
    } else {
      std::memcpy(&v[i], at, 4);
    }
  }
  return v;
}

// ---- the table ----

std::string dims(std::initializer_list<std::pair<const char*, long long>> d) {
  std::string s;
  for (const auto& [k, v] : d) s += std::string(s.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return s;
}

// Per-element tolerance 1e-5 of each output's sum of magnitudes (its start value and every term added
// to it): float sums of up to ~1000 terms in two orders stay within a few 1e-7 of it.
std::vector<double> magnitude_tolerance(std::vector<double> mag) {
  for (double& m : mag) m *= 1e-5;
  return mag;
}

// dw[c] (or db[c]) += sum over rows of term(n, c): the tolerance from |start| + sum |term|.
template <typename Term>
std::vector<double> column_tolerance(const std::vector<float>& start, int N, int C, Term term) {
  std::vector<double> mag(start.begin(), start.end());
  for (double& m : mag) m = std::fabs(m);
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c) mag[c] += std::fabs(term(n, c));
  return magnitude_tolerance(std::move(mag));
}

void add_gemm(std::vector<OpCase>& ops, DType t) {
  struct G {
    int M, N, K;
  };
  auto one = [&](G g, Trans ta, Trans tb, Accumulate acc, DType c_type) {
    const std::size_t M = g.M, N = g.N, K = g.K;
    // Each backend's fp32 sum of K exact products (16-bit products are exact in fp32) and the accumulate
    // add is within (K + 1) 2^-24 m of the exact value, m = sum_k |a_k b_k| + |C0|; two of them within
    // 2 (K + 2) 2^-24 m; then one rounding to C's dtype.
    Tolerance tol{c_type == DType::f32 ? 0.0 : 1.0, 0, 0, [=](const Values& v) {
                    const auto &A = v.at("A"), &B = v.at("B");
                    std::vector<double> m(M * N, 0.0);
                    if (acc == Accumulate::yes)
                      for (std::size_t i = 0; i < M * N; ++i) m[i] = std::fabs(v.at("C").at(i));
                    for (std::size_t i = 0; i < M; ++i)
                      for (std::size_t k = 0; k < K; ++k) {
                        const double a = std::fabs(ta == Trans::no ? A[i * K + k] : A[k * M + i]);
                        for (std::size_t j = 0; j < N; ++j)
                          m[i * N + j] += a * std::fabs(tb == Trans::no ? B[k * N + j] : B[j * K + k]);
                      }
                    for (double& x : m) x *= 2.0 * double(K + 2) * 0x1p-24;
                    return m;
                  }};
    std::vector<Arg> args = {in("A", t, M * K), in("B", t, K * N)};
    args.push_back(acc == Accumulate::yes ? inout("C", c_type, M * N, tol, -2, 2)
                                          : out("C", c_type, M * N, tol));
    ops.push_back({"gemm",
                   std::string("gemm ") + (ta == Trans::yes ? "T" : "N") + (tb == Trans::yes ? "T" : "N") +
                       (acc == Accumulate::yes ? " += " : " = ") +
                       dims({{"M", g.M}, {"N", g.N}, {"K", g.K}}) + " C " + std::string(dtype_name(c_type)),
                   args, [=](Backend& be, Stream& s, Bufs& p) {
                     be.gemm(s, ta, tb, g.M, g.N, g.K, p["A"], p["B"], p["C"], acc);
                   }});
  };
  for (Trans ta : {Trans::no, Trans::yes})
    for (Trans tb : {Trans::no, Trans::yes})
      for (Accumulate acc : {Accumulate::no, Accumulate::yes}) one({7, 13, 5}, ta, tb, acc, t);
  one({64, 768, 2304}, Trans::no, Trans::no, Accumulate::no, t);   // a GPT-2 projection (K = 3 x 768)
  one({64, 768, 768}, Trans::no, Trans::yes, Accumulate::yes, t);  // onto the residual stream
  one({33, 50304, 64}, Trans::no, Trans::yes, Accumulate::no, t);  // logits over the padded vocabulary
  one({96, 64, 257}, Trans::yes, Trans::no, Accumulate::yes, DType::f32);  // a weight gradient: fp32 C
}

void add_bias_ops(std::vector<OpCase>& ops, DType t) {
  for (auto [rows, cols] : {std::pair{4099, 523}, std::pair{3, 7}}) {
    const std::size_t n = std::size_t(rows) * cols;
    ops.push_back(
        {"bias",
         "add_bias " + dims({{"rows", rows}, {"cols", cols}}),
         {inout("out", t, n, rounded_once(), -5, 5), in("bias", t, cols, -2, 2)},
         [=](Backend& be, Stream& s, Bufs& p) { be.add_bias(s, p["out"], p["bias"], rows, cols); }});
  }
  for (auto [rows, cols] : {std::pair{1031, 1001}, std::pair{3, 7}}) {
    const std::size_t n = std::size_t(rows) * cols;
    Tolerance tol{0, 0, 0, [=](const Values& v) {
                    const auto& d = v.at("dout");
                    return column_tolerance(v.at("dbias"), rows, cols,
                                            [&](int r, int c) { return d[std::size_t(r) * cols + c]; });
                  }};
    ops.push_back({"bias",
                   "bias_backward " + dims({{"rows", rows}, {"cols", cols}}),
                   {inout("dbias", DType::f32, cols, tol), in("dout", t, n)},
                   [=](Backend& be, Stream& s, Bufs& p) {
                     be.bias_backward(s, p.f32("dbias"), p["dout"], rows, cols);
                   }});
  }
}

void add_encoder(std::vector<OpCase>& ops, DType t) {
  struct E {
    int B, T, C, V;
  };
  // Repeated tokens (a 50-token vocabulary over 387 positions), and one shape past a grid lap.
  for (E e : {E{3, 129, 777, 50}, E{2, 347, 2053, 1000}})
    for (bool wpe : {true, false}) {  // without a position table: Llama
      const std::size_t BTC = std::size_t(e.B) * e.T * e.C;
      const std::string shape =
          dims({{"B", e.B}, {"T", e.T}, {"C", e.C}, {"V", e.V}}) + (wpe ? "" : " no wpe");
      std::vector<Arg> fwd = {out("out", t, BTC, rounded_once()),
                              in("tokens", DType::i32, std::size_t(e.B) * e.T, 0, e.V),
                              in("wte", t, std::size_t(e.V) * e.C), in("wpe", t, std::size_t(e.T) * e.C)};
      ops.push_back({"encoder", "encoder_forward " + shape, fwd, [=](Backend& be, Stream& s, Bufs& p) {
                       be.encoder_forward(s, p["out"], p.i32("tokens"), p["wte"],
                                          wpe ? CView(p["wpe"]) : CView{nullptr, t}, e.B, e.T, e.C);
                     }});
      // Both add each position's row in position order; the tolerance allows another order anyway.
      auto magnitudes = [=](const Values& v, bool of_wte) {
        const auto& d = v.at("dout");
        const auto& tok = v.at("tokens");
        const auto& start = v.at(of_wte ? "dwte" : "dwpe");
        std::vector<double> mag(start.size());
        for (std::size_t i = 0; i < mag.size(); ++i) mag[i] = std::fabs(start[i]);
        for (std::size_t p = 0; p < std::size_t(e.B) * e.T; ++p) {
          const std::size_t row = of_wte ? std::size_t(tok[p]) : p % e.T;
          for (int c = 0; c < e.C; ++c) mag[row * e.C + c] += std::fabs(d[p * e.C + c]);
        }
        return magnitude_tolerance(std::move(mag));
      };
      std::vector<Arg> bwd = {inout("dwte", DType::f32, std::size_t(e.V) * e.C,
                                    {0, 0, 0, [=](const Values& v) { return magnitudes(v, true); }}),
                              inout("dwpe", DType::f32, std::size_t(e.T) * e.C,
                                    {0, 0, 0, [=](const Values& v) { return magnitudes(v, false); }}),
                              in("dout", t, BTC), in("tokens", DType::i32, std::size_t(e.B) * e.T, 0, e.V)};
      ops.push_back({"encoder", "encoder_backward " + shape, bwd, [=](Backend& be, Stream& s, Bufs& p) {
                       be.encoder_backward(s, p.f32("dwte"), wpe ? p.f32("dwpe") : nullptr, p["dout"],
                                           p.i32("tokens"), e.B, e.T, e.C);
                     }});
    }
}

// Rows with different means and spreads (an offset and a scale per row).
void spread_rows(std::vector<float>& x, int N, int C) {
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      x[std::size_t(n) * C + c] = x[std::size_t(n) * C + c] * (1 + n % 3) + 0.1f * (n % 7);
}

void add_layernorm(std::vector<OpCase>& ops, DType t) {
  for (auto [N, C] : {std::pair{67, 1600}, std::pair{1031, 777}, std::pair{4, 3}, std::pair{5, 12288}}) {
    const std::size_t NC = std::size_t(N) * C;
    const std::string shape = dims({{"N", N}, {"C", C}});
    // Both sum each row in fp32, in different orders: statistics within 1e-5, and out's fp32 value too
    // before its rounding (the fp32 tests' tolerances).
    ops.push_back(
        {"layernorm",
         "layernorm_forward " + shape,
         {out("out", t, NC, rounded_once(1e-5, 1e-5)), out("mean", DType::f32, N, fp32_sum(1e-5, 1e-5)),
          out("rstd", DType::f32, N, fp32_sum(1e-5, 1e-5)), in("inp", t, NC, -2, 2), in("w", t, C, 0.5, 1.5),
          in("b", t, C, -0.5, 0.5)},
         [=](Backend& be, Stream& s, Bufs& p) {
           be.layernorm_forward(s, p["out"], p.f32("mean"), p.f32("rstd"), p["inp"], p["w"], p["b"], N, C);
         },
         [=](Values& v) { spread_rows(v["inp"], N, C); }});
    // Backward reads mean and rstd computed here from the rounded input (in double), the same on both.
    auto tol_w = [=](const Values& v, bool dw) {
      const auto &x = v.at("inp"), &d = v.at("dout"), &m = v.at("mean"), &r = v.at("rstd");
      return column_tolerance(v.at(dw ? "dw" : "db"), N, C, [&](int n, int c) {
        const std::size_t i = std::size_t(n) * C + c;
        return dw ? (double(x[i]) - m[n]) * r[n] * d[i] : double(d[i]);
      });
    };
    ops.push_back({"layernorm",
                   "layernorm_backward " + shape,
                   {inout("dinp", t, NC, rounded_once(1e-5, 1e-5)),
                    inout("dw", DType::f32, C, {0, 0, 0, [=](const Values& v) { return tol_w(v, true); }}),
                    inout("db", DType::f32, C, {0, 0, 0, [=](const Values& v) { return tol_w(v, false); }}),
                    in("dout", t, NC), in("inp", t, NC, -2, 2), in("w", t, C, 0.5, 1.5),
                    in("mean", DType::f32, N), in("rstd", DType::f32, N)},
                   [=](Backend& be, Stream& s, Bufs& p) {
                     be.layernorm_backward(s, p["dinp"], p.f32("dw"), p.f32("db"), p["dout"], p["inp"],
                                           p["w"], p.f32("mean"), p.f32("rstd"), N, C);
                   },
                   [=](Values& v) {
                     spread_rows(v["inp"], N, C);
                     encode(v["inp"], t);  // the statistics of the values the kernels read
                     for (int n = 0; n < N; ++n) {
                       double sum = 0, sq = 0;
                       for (int c = 0; c < C; ++c) sum += v["inp"][std::size_t(n) * C + c];
                       const double mean = sum / C;
                       for (int c = 0; c < C; ++c) sq += std::pow(v["inp"][std::size_t(n) * C + c] - mean, 2);
                       v["mean"][n] = float(mean);
                       v["rstd"][n] = float(1.0 / std::sqrt(sq / C + 1e-5));
                     }
                   }});
  }
}

void add_rmsnorm(std::vector<OpCase>& ops, DType t) {
  for (auto [N, C] : {std::pair{4, 3}, std::pair{1031, 777}, std::pair{67, 2048}, std::pair{3, 8192}}) {
    const std::size_t NC = std::size_t(N) * C;
    const std::string shape = dims({{"N", N}, {"C", C}});
    ops.push_back(
        {"rmsnorm",
         "rmsnorm_forward " + shape,
         {out("out", t, NC, rounded_once(1e-5, 1e-5)), out("rstd", DType::f32, N, fp32_sum(1e-5, 1e-5)),
          in("inp", t, NC, -2, 2), in("w", t, C, 0.5, 1.5)},
         [=](Backend& be, Stream& s, Bufs& p) {
           be.rmsnorm_forward(s, p["out"], p.f32("rstd"), p["inp"], p["w"], N, C, 1e-5f);
         },
         [=](Values& v) { spread_rows(v["inp"], N, C); }});
    Tolerance tol_dw{0, 0, 0, [=](const Values& v) {
                       const auto &x = v.at("inp"), &d = v.at("dout"), &r = v.at("rstd");
                       return column_tolerance(v.at("dw"), N, C, [&](int n, int c) {
                         const std::size_t i = std::size_t(n) * C + c;
                         return double(d[i]) * x[i] * r[n];
                       });
                     }};
    ops.push_back(
        {"rmsnorm",
         "rmsnorm_backward " + shape,
         {inout("dinp", t, NC, rounded_once(1e-5, 1e-5)), inout("dw", DType::f32, C, tol_dw),
          in("dout", t, NC), in("inp", t, NC, -2, 2), in("w", t, C, 0.5, 1.5), in("rstd", DType::f32, N)},
         [=](Backend& be, Stream& s, Bufs& p) {
           be.rmsnorm_backward(s, p["dinp"], p.f32("dw"), p["dout"], p["inp"], p["w"], p.f32("rstd"), N, C);
         },
         [=](Values& v) {
           spread_rows(v["inp"], N, C);
           encode(v["inp"], t);  // the statistics of the values the kernels read
           for (int n = 0; n < N; ++n) {
             double sq = 0;
             for (int c = 0; c < C; ++c) sq += std::pow(double(v["inp"][std::size_t(n) * C + c]), 2);
             v["rstd"][n] = float(1.0 / std::sqrt(sq / C + 1e-5));
           }
         }});
  }
}

void add_gelu(std::vector<OpCase>& ops, DType t) {
  for (std::size_t n : {std::size_t(1000), cuda::kGridLap + 12345}) {
    const std::string shape = dims({{"n", static_cast<long long>(n)}});
    ops.push_back({"gelu",
                   "gelu_forward " + shape,
                   {out("out", t, n, rounded_once()), in("inp", t, n, -8, 8)},
                   [=](Backend& be, Stream& s, Bufs& p) { be.gelu_forward(s, p["out"], p["inp"], n); }});
    ops.push_back(
        {"gelu",
         "gelu_backward " + shape,
         {out("dinp", t, n, rounded_once()), in("inp", t, n, -8, 8), in("dout", t, n, -2, 2)},
         [=](Backend& be, Stream& s, Bufs& p) { be.gelu_backward(s, p["dinp"], p["inp"], p["dout"], n); }});
  }
}

void add_add_fill_cast(std::vector<OpCase>& ops, DType t) {
  for (std::size_t n : {std::size_t(1000), cuda::kGridLap + 12345}) {
    const std::string shape = dims({{"n", static_cast<long long>(n)}});
    ops.push_back({"add_fill_cast",
                   "add " + shape,
                   {out("out", t, n, rounded_once()), in("a", t, n, -100, 100), in("b", t, n, -100, 100)},
                   [=](Backend& be, Stream& s, Bufs& p) { be.add(s, p["out"], p["a"], p["b"], n); }});
    // 0.1 is not a 16-bit value: the fill rounds it.
    ops.push_back({"add_fill_cast",
                   "fill " + shape,
                   {out("x", t, n, rounded_once())},
                   [=](Backend& be, Stream& s, Bufs& p) { be.fill(s, p["x"], 0.1f, n); }});
    ops.push_back(
        {"add_fill_cast",
         "cast to fp32 " + shape,
         {out("dst", DType::f32, n, {}), in("src", t, n, -100, 100)},
         [=](Backend& be, Stream& s, Bufs& p) { be.cast(s, p["dst"].ptr, DType::f32, p["src"].ptr, t, n); }});
    ops.push_back(
        {"add_fill_cast",
         "cast from fp32 " + shape,
         {out("dst", t, n, rounded_once()), in("src", DType::f32, n, -100, 100)},
         [=](Backend& be, Stream& s, Bufs& p) { be.cast(s, p["dst"].ptr, t, p["src"].ptr, DType::f32, n); }});
  }
}

// Llama's table for T positions of head size hd: cos [T, hd/2] then sin [T, hd/2] of t * theta^(-2i/hd).
void rope_table(std::vector<float>& table, int T, int hd) {
  const int half = hd / 2;
  for (int p = 0; p < T; ++p)
    for (int i = 0; i < half; ++i) {
      const double angle = p * std::pow(500000.0, -2.0 * i / hd);
      table[std::size_t(p) * half + i] = float(std::cos(angle));
      table[std::size_t(T + p) * half + i] = float(std::sin(angle));
    }
}

void add_rope(std::vector<OpCase>& ops, DType t) {
  // q (NH heads from column 0) then k (KVH heads after them) of a grouped-query qkv; v untouched.
  for (AttentionShape a :
       {AttentionShape{3, 37, 8, 2, 64}, AttentionShape{1, 5, 3, 3, 2}, AttentionShape{2, 64, 6, 2, 96}})
    for (bool inverse : {false, true}) {
      const int N = a.B * a.T, stride = a.qkv_width();
      ops.push_back({"rope",
                     std::string(inverse ? "rope inverse " : "rope ") +
                         dims({{"B", a.B}, {"T", a.T}, {"NH", a.NH}, {"KVH", a.KVH}, {"hd", a.hd}}),
                     {inout("x", t, std::size_t(N) * stride, rounded_once(), -2, 2),
                      in("table", DType::f32, std::size_t(a.T) * a.hd)},
                     [=](Backend& be, Stream& s, Bufs& p) {
                       be.rope(s, p["x"], p.f32("table"), N, a.T, a.NH, a.hd, stride, inverse);
                       be.rope(s, offset(p["x"], std::size_t(a.NH) * a.hd), p.f32("table"), N, a.T, a.KVH,
                               a.hd, stride, inverse);
                     },
                     [=](Values& v) { rope_table(v["table"], a.T, a.hd); }});
    }
}

void add_swiglu(std::vector<OpCase>& ops, DType t) {
  for (auto [N, I] : {std::pair{1031, 2053}, std::pair{3, 5}}) {  // past a grid lap, I not a multiple of 32
    const std::size_t n = std::size_t(N) * I;
    const std::string shape = dims({{"N", N}, {"I", I}});
    ops.push_back(
        {"swiglu",
         "swiglu_forward " + shape,
         {out("out", t, n, rounded_once()), in("gate_up", t, 2 * n, -8, 8)},
         [=](Backend& be, Stream& s, Bufs& p) { be.swiglu_forward(s, p["out"], p["gate_up"], N, I); }});
    ops.push_back(
        {"swiglu",
         "swiglu_backward " + shape,
         {out("dgate_up", t, 2 * n, rounded_once()), in("gate_up", t, 2 * n, -8, 8), in("dout", t, n, -2, 2)},
         [=](Backend& be, Stream& s, Bufs& p) {
           be.swiglu_backward(s, p["dgate_up"], p["gate_up"], p["dout"], N, I);
         }});
  }
}

void add_softmax_xent(std::vector<OpCase>& ops, DType t) {
  for (auto [N, V, Vp] : {std::tuple{37, 50257, 50304}, std::tuple{5, 3, 8}, std::tuple{7, 1000, 1000}}) {
    const float dloss = 1.0f / float(N);
    // The sums of exponentials differ in their order of adds (the fp32 test's 1e-5); dlogits is then
    // rounded once (padded columns exactly 0 on both).
    ops.push_back({"softmax_xent",
                   "softmax_xent " + dims({{"N", N}, {"V", V}, {"Vp", Vp}}),
                   {out("losses", DType::f32, N, fp32_sum(1e-5, 1e-5)),
                    inout("logits", t, std::size_t(N) * Vp, rounded_once(1e-5, 1e-6 * dloss), -5, 5),
                    in("targets", DType::i32, N, 0, V)},
                   [=](Backend& be, Stream& s, Bufs& p) {
                     be.softmax_xent(s, p.f32("losses"), p["logits"], p.i32("targets"), N, V, Vp, dloss);
                   },
                   [=](Values& v) {
                     auto row = [&](int n) { return v["logits"].data() + std::size_t(n) * Vp; };
                     auto& tgt = v["targets"];
                     for (int n = 0; n < N; ++n)
                       std::fill(row(n) + V, row(n) + Vp, 7.0f);  // padding: back as 0
                     if (N <= 4) return;
                     row(1)[int(tgt[1])] = 45.0f;  // the target far above the rest: p ~ 1
                     row(2)[V / 2] = 80.0f;        // the target 180 below the max: p underflows
                     tgt[2] = float((V / 2 + 1) % V);
                     row(2)[int(tgt[2])] = -100.0f;
                     row(3)[V - 1] = std::numeric_limits<float>::quiet_NaN();  // the row's loss is NaN
                     std::fill(row(4), row(4) + V, 0.25f);                     // a uniform softmax
                   }});
  }
}

void add_attention(std::vector<OpCase>& ops, DType t) {
  // Multi-head (GPT-2: KVH == NH) and grouped-query shapes, T below, at and past the 64-row tiles.
  for (AttentionShape a :
       {AttentionShape{2, 7, 3, 3, 8}, AttentionShape{1, 70, 12, 12, 64}, AttentionShape{2, 65, 6, 2, 64},
        AttentionShape{1, 130, 8, 1, 128}, AttentionShape{1, 257, 4, 4, 64}})
    for (cuda::Attention math : {cuda::Attention::fp32, cuda::Attention::bf16}) {
      const bool simt = math == cuda::Attention::fp32;
      const double g = std::sqrt(double(a.group()));
      // fp32 SIMT: the fp32 values within the fp32 test's 2e-5 + 1e-4 relative (times sqrt(G) for dK, dV,
      // sums over G query heads; applied to every column here), then rounded once. Tensor cores: the bf16
      // test's 0.03 + 5%, which covers the operands' own bf16 rounding and the result's.
      // Backward's D = rowsum(dout * out) is taken, on both backends, from the out backward is given (the
      // 16-bit one forward stored), as FlashAttention does. From forward's unrounded out instead, D would
      // move by up to half an ulp of each out element, and dq, dk by up to 6e-3 (bf16; 1.2e-3 fp16) at
      // T = 257, hd = 64: ~3% of them past this tolerance.
      const Tolerance out_tol = simt ? rounded_once(1e-4, 2e-5) : fp32_sum(0.05, 0.03);
      const Tolerance dqkv_tol = simt ? rounded_once(1e-4, 2e-5 * g) : fp32_sum(0.05, 0.03 * g);
      const std::size_t rows = std::size_t(a.B) * a.T;
      ops.push_back(
          {"attention",
           std::string("attention ") + (simt ? "fp32 simt " : "bf16 tensor cores ") +
               dims({{"B", a.B}, {"T", a.T}, {"NH", a.NH}, {"KVH", a.KVH}, {"hd", a.hd}}),
           {in("qkv", t, rows * a.qkv_width(), -2, 2), in("dout", t, rows * a.out_width(), -2, 2),
            out("out", t, rows * a.out_width(), out_tol), out("dqkv", t, rows * a.qkv_width(), dqkv_tol),
            scratch("saved", [=](DeviceKind k) { return attention_saved_floats(k, a, t); }),
            scratch("scratch", [=](DeviceKind k) { return attention_scratch_floats(k, a, t); })},
           [=](Backend& be, Stream& s, Bufs& p) {
             be.attention_forward(s, p["out"], p.f32("saved"), p.f32("scratch"), p["qkv"], a);
             // Backward's D = rowsum(dout * out) then reads the same out on both backends.
             p.checkpoint("out");
             be.attention_backward(s, p["dqkv"], p.f32("scratch"), p["dout"], p["qkv"], p["out"],
                                   p.f32("saved"), a);
           },
           nullptr,
           math});
    }
}

std::vector<OpCase> op_table(DType t) {
  std::vector<OpCase> ops;
  add_gemm(ops, t);
  add_bias_ops(ops, t);
  add_encoder(ops, t);
  add_layernorm(ops, t);
  add_gelu(ops, t);
  add_attention(ops, t);
  add_rmsnorm(ops, t);
  add_rope(ops, t);
  add_swiglu(ops, t);
  add_add_fill_cast(ops, t);
  add_softmax_xent(ops, t);
  return ops;
}

// ---- running a case ----

bool compared(Role r) { return r == Role::out || r == Role::inout; }

// Random inputs (rounded to their dtypes), made consistent by the case's prepare, rounded again.
Values make_inputs(const OpCase& op, std::uint64_t seed, std::map<std::string, Bytes>& bytes) {
  test::Rng rng(seed);
  Values v;
  for (const Arg& a : op.args) {
    if (a.role != Role::in && a.role != Role::inout) continue;
    std::vector<float>& x = v[a.name];
    x.resize(a.n);
    for (float& e : x)
      e = a.dtype == DType::i32 ? float(std::floor(rng.uniform(a.lo, a.hi))) : float(rng.uniform(a.lo, a.hi));
    encode(x, a.dtype);
  }
  if (op.prepare) op.prepare(v);
  for (const Arg& a : op.args)
    if (v.count(a.name)) bytes[a.name] = encode(v[a.name], a.dtype);
  return v;
}

// The case on one device: inputs uploaded, outputs and scratch filled with 0xff bytes (NaN in every float
// type, so an element left unwritten shows), the case run, its checkpoints and outputs read back. With a
// reference (the cpu's results), each checkpoint continues from the reference's value.
std::map<std::string, Bytes> run_case(Device& dev, const OpCase& op,
                                      const std::map<std::string, Bytes>& inputs,
                                      const std::map<std::string, Bytes>* reference) {
  Backend& be = dev.backend();
  auto stream = dev.create_stream();
  Stream& s = *stream;
  std::map<std::string, Buffer<std::uint8_t>> bufs;
  std::map<std::string, std::size_t> sizes;  // bytes
  Bufs p;
  for (const Arg& a : op.args) {
    const std::size_t bytes =
        (a.role == Role::scratch ? a.scratch_floats(dev.kind()) : a.n) * dtype_size(a.dtype);
    auto& b = bufs.emplace(a.name, Buffer<std::uint8_t>(dev, std::max<std::size_t>(bytes, 1), a.name))
                  .first->second;
    sizes[a.name] = bytes;
    if (inputs.count(a.name))
      be.copy_async(s, b.data(), inputs.at(a.name).data(), bytes);
    else
      be.memset_async(s, b.data(), 0xff, bytes);
    p.views[a.name] = View{b.data(), a.dtype};
  }
  std::map<std::string, Bytes> results;
  auto download = [&](const std::string& name) {
    Bytes h(sizes.at(name));
    be.copy_async(s, h.data(), bufs.at(name).data(), h.size());
    s.synchronize();
    return h;
  };
  p.checkpoint = [&](const std::string& name) {
    results[name] = download(name);
    if (reference) be.copy_async(s, bufs.at(name).data(), reference->at(name).data(), sizes.at(name));
  };
  op.run(be, s, p);
  for (const Arg& a : op.args)
    if (compared(a.role) && !results.count(a.name)) results[a.name] = download(a.name);
  return results;
}

::testing::AssertionResult compare_output(const Arg& a, const Values& in, const Bytes& got_bytes,
                                          const Bytes& want_bytes) {
  const std::vector<float> got = decode(got_bytes, a.dtype), want = decode(want_bytes, a.dtype);
  std::vector<double> tol(want.size());
  const std::vector<double> each = a.tol.each ? a.tol.each(in) : std::vector<double>(want.size(), 0.0);
  const double rel = a.tol.ulps * ulp_rel(a.dtype) + a.tol.rel;
  const double abs = a.tol.abs + (a.tol.ulps > 0 ? subnormal_step(a.dtype) : 0.0);
  for (std::size_t i = 0; i < want.size(); ++i)
    tol[i] = rel * std::max(std::fabs(double(got[i])), std::fabs(double(want[i]))) + abs + each[i];
  return test::within(a.name, got, want, tol);
}

class CudaBackendOps : public ::testing::TestWithParam<std::tuple<DType, std::string>> {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << cuda::unavailable_reason();
  }
  Device& cuda_device(cuda::Attention math) {
    auto& dev = math == cuda::Attention::fp32 ? fp32_attention_ : bf16_attention_;
    if (!dev) dev = cuda::make_cuda_device({}, {cuda::Tf32::off, math});
    return *dev;
  }
  std::unique_ptr<Device> cpu_ = make_cpu_device();
  std::unique_ptr<Device> fp32_attention_, bf16_attention_;
};

const std::vector<std::string> kFamilies = {"gemm",   "bias",          "encoder",     "layernorm",
                                            "gelu",   "attention",     "rmsnorm",     "rope",
                                            "swiglu", "add_fill_cast", "softmax_xent"};

TEST_P(CudaBackendOps, MatchTheCpuBackendWith16BitActivations) {
  const auto& [t, family] = GetParam();
  std::uint64_t seed = 1000;
  int ran = 0;
  for (const OpCase& op : op_table(t)) {
    if (op.family != family) continue;
    SCOPED_TRACE(op.name + ", " + std::string(dtype_name(t)) + " activations");
    std::map<std::string, Bytes> inputs;
    const Values values = make_inputs(op, ++seed, inputs);
    Device& gpu = cuda_device(op.attention);
    const auto want = run_case(*cpu_, op, inputs, nullptr);
    const auto got = run_case(gpu, op, inputs, &want);
    for (const Arg& a : op.args)
      if (compared(a.role)) EXPECT_TRUE(compare_output(a, values, got.at(a.name), want.at(a.name)));
    const auto again = run_case(gpu, op, inputs, &want);
    for (const auto& [name, bytes] : got)
      EXPECT_TRUE(bytes == again.at(name)) << name << ": a second cuda run gave other bits";
    ++ran;
  }
  EXPECT_GT(ran, 0) << "no case of family " << family;
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaBackendOps,
                         ::testing::Combine(::testing::Values(DType::bf16, DType::f16),
                                            ::testing::ValuesIn(kFamilies)),
                         [](const ::testing::TestParamInfo<std::tuple<DType, std::string>>& info) {
                           return std::string(dtype_name(std::get<0>(info.param))) + "_" +
                                  std::get<1>(info.param);
                         });

// A 16-bit C must be the inputs' dtype (cuBLASLt has no bf16 x bf16 -> fp16 product here, and an fp32
// product into a 16-bit C is never asked for).
class CudaBackendGemm : public test::CudaKernelTest {};

TEST_F(CudaBackendGemm, RefusesA16BitCOfAnotherDtypeByName) {
  auto dev = cuda::make_cuda_device({});
  auto stream = dev->create_stream();
  Buffer<std::uint8_t> buf(*dev, 64, "operands");
  for (auto [in, c] : {std::pair{DType::bf16, DType::f16}, std::pair{DType::f32, DType::bf16}}) {
    try {
      dev->backend().gemm(*stream, Trans::no, Trans::no, 2, 2, 2, {buf.data(), in}, {buf.data(), in},
                          View{buf.data(), c}, Accumulate::no);
      FAIL() << dtype_name(in) << " inputs into a " << dtype_name(c) << " C were accepted";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(std::string("C is ") + std::string(dtype_name(c))), std::string::npos) << msg;
      EXPECT_NE(msg.find(std::string(dtype_name(in))), std::string::npos) << msg;
    }
  }
}

// The activation checks run on the host before any launch, so these need no GPU: each operation with two
// activations of different dtypes is refused, naming itself and both dtypes.
TEST(CudaBackendOpsArguments, EveryOperationRefusesActivationsOfTwoDtypesByName) {
  const View b{nullptr, DType::bf16};
  const CView f{nullptr, DType::f32}, w{nullptr, DType::bf16};
  const AttentionShape a{1, 4, 2, 2, 64};
  const cudaStream_t s{};
  const std::vector<std::pair<std::string, std::function<void()>>> calls = {
      {"gelu_forward", [&] { cuda::gelu_forward(s, b, f, 4); }},
      {"gelu_backward", [&] { cuda::gelu_backward(s, b, w, f, 4); }},
      {"add", [&] { cuda::add(s, b, w, f, 4); }},
      {"layernorm_forward", [&] { cuda::layernorm_forward(s, b, nullptr, nullptr, f, w, w, 1, 4); }},
      {"layernorm_backward",
       [&] { cuda::layernorm_backward(s, b, nullptr, nullptr, w, f, w, nullptr, nullptr, 1, 4); }},
      {"rmsnorm_forward", [&] { cuda::rmsnorm_forward(s, b, nullptr, f, w, 1, 4, 1e-5f); }},
      {"rmsnorm_backward", [&] { cuda::rmsnorm_backward(s, b, nullptr, f, w, w, nullptr, 1, 4); }},
      {"swiglu_forward", [&] { cuda::swiglu_forward(s, b, f, 1, 4); }},
      {"swiglu_backward", [&] { cuda::swiglu_backward(s, b, w, f, 1, 4); }},
      {"attention_forward", [&] { cuda::attention_forward(s, b, nullptr, f, a); }},
      {"attention_backward", [&] { cuda::attention_backward(s, b, nullptr, w, w, f, nullptr, a); }},
      {"attention_forward",
       [&] { cuda::attention_forward(s, b, nullptr, f, a, cuda::AttentionMath::bf16_tensor_cores); }},
      {"attention_backward",
       [&] {
         cuda::attention_backward(s, b, nullptr, f, w, w, nullptr, a, cuda::AttentionMath::bf16_tensor_cores);
       }},
  };
  for (const auto& [op, call] : calls) {
    SCOPED_TRACE(op);
    try {
      call();
      ADD_FAILURE() << "bf16 and fp32 activations were accepted";
    } catch (const Error& e) {
      const std::string msg = e.what();
      for (const std::string& part :
           {op + ": activations must share one dtype", std::string("bf16"), std::string("fp32")})
        EXPECT_NE(msg.find(part), std::string::npos) << "no \"" << part << "\" in: " << msg;
    }
  }
}

TEST(CudaBackendOpsArguments, AnIntegerActivationIsRefusedByName) {
  const cudaStream_t s{};
  const View i{nullptr, DType::i32};
  for (const auto& [op, call] : std::vector<std::pair<std::string, std::function<void()>>>{
           {"fill", [&] { cuda::fill(s, i, 1.0f, 4); }},
           {"rope", [&] { cuda::rope(s, i, nullptr, 1, 1, 1, 2, 2, false); }},
           {"softmax_xent", [&] { cuda::softmax_xent(s, nullptr, i, nullptr, 1, 2, 2, 1.0f); }},
           {"bias_backward", [&] { cuda::bias_backward(s, nullptr, i, 1, 2); }}}) {
    SCOPED_TRACE(op);
    try {
      call();
      ADD_FAILURE() << "int32 activations were accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(op + ": activations cannot be int32"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace tz
