// Every cpu backend operation that takes activations, run with 16-bit activations (bf16, fp16) and with
// fp32 ones on the same values (inputs rounded to both 16-bit formats first, so each run reads exactly the
// same numbers), output by output, element by element: one table of ops at several shapes, as ggml's
// test-backend-ops checks each backend. A 16-bit kernel computes in fp32 and rounds what it stores once,
// so its outputs are the fp32 run's within one unit in the last place of the 16-bit format (2^-8
// relative for bf16, 2^-11 for fp16: half an ulp of rounding, doubled for the fp32 run's own last-bit
// differences in sums), plus a small absolute term for values that cancel to near zero.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/cpu_attention.h"
#include "core/dtype.h"
#include "tests/common/stream.h"

namespace tz {
namespace {

// Host-side activations of one dtype: the values as floats, and their bytes in that dtype.
struct Acts {
  DType dtype;
  std::vector<std::uint8_t> bytes;
  Acts(DType t, const std::vector<float>& v) : dtype(t), bytes(v.size() * dtype_size(t)) {
    for (std::size_t i = 0; i < v.size(); ++i) set(i, v[i]);
  }
  std::size_t size() const { return bytes.size() / dtype_size(dtype); }
  View view() { return {bytes.data(), dtype}; }
  CView cview() const { return {bytes.data(), dtype}; }
  void set(std::size_t i, float x) {
    switch (dtype) {
      case DType::bf16: reinterpret_cast<bf16*>(bytes.data())[i] = float_to_bf16(x); break;
      case DType::f16: reinterpret_cast<fp16*>(bytes.data())[i] = float_to_fp16(x); break;
      default: reinterpret_cast<float*>(bytes.data())[i] = x;
    }
  }
  float at(std::size_t i) const {
    switch (dtype) {
      case DType::bf16: return bf16_to_float(reinterpret_cast<const bf16*>(bytes.data())[i]);
      case DType::f16: return fp16_to_float(reinterpret_cast<const fp16*>(bytes.data())[i]);
      default: return reinterpret_cast<const float*>(bytes.data())[i];
    }
  }
  std::vector<float> values() const {
    std::vector<float> v(size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = at(i);
    return v;
  }
};

// Values exact in bf16 and in fp16 (rounded through both, kept away from fp16's subnormals).
std::vector<float> values(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) {
    float y = d(rng);
    if (std::abs(y) < 1e-3f) y = y < 0 ? -1e-3f : 1e-3f;
    x = fp16_to_float(float_to_fp16(bf16_to_float(float_to_bf16(y))));
  }
  return v;
}

// One op's run: the named outputs it produced (activation outputs widened to float; fp32 outputs as
// they are), given the activation dtype and the same input values.
using Outputs = std::map<std::string, std::vector<float>>;
using Op = std::function<Outputs(DType act)>;

struct Case {
  std::string name;
  Op op;
  double rel_ulps = 2;  // in ulps of the 16-bit format, relative to the larger magnitude
  double abs_tol = 1e-5;
};

double ulp(DType t) { return t == DType::bf16 ? std::ldexp(1.0, -7) : std::ldexp(1.0, -10); }

constexpr int kRows = 6, kCols = 40;

Backend& be() {
  static std::unique_ptr<Backend> b = make_cpu_backend();
  return *b;
}
Stream& s() { return test::cpu_stream(); }

std::vector<Case> cases() {
  std::vector<Case> v;
  const std::vector<float> x = values(kRows * kCols, 1), y = values(kRows * kCols, 2), d = values(kRows * kCols, 3);
  const std::vector<float> w = values(kCols, 4), b = values(kCols, 5);
  for (auto [ta, tb] : {std::pair{Trans::no, Trans::no}, {Trans::no, Trans::yes}, {Trans::yes, Trans::no}})
    for (Accumulate acc : {Accumulate::no, Accumulate::yes}) {
      const int M = 7, N = 24, K = 33;
      const std::vector<float> a = values(M * K, 6), bb = values(K * N, 7), c0 = values(M * N, 8);
      v.push_back({"gemm " + std::string(ta == Trans::yes ? "T" : "N") + (tb == Trans::yes ? "T" : "N") +
                       (acc == Accumulate::yes ? " +=" : ""),
                   [=](DType t) {
                     Acts A(t, a), B(t, bb), C(t, c0);
                     be().gemm(s(), ta, tb, M, N, K, A.cview(), B.cview(), C.view(), acc);
                     return Outputs{{"C", C.values()}};
                   }});
      v.push_back({"gemm fp32 C from 16-bit " + std::string(acc == Accumulate::yes ? "+=" : "="),
                   [=](DType t) {
                     Acts A(t, a), B(t, bb);
                     std::vector<float> C = c0;
                     be().gemm(s(), ta, tb, M, N, K, A.cview(), B.cview(), View(C.data()), acc);
                     return Outputs{{"C", C}};
                   },
                   0.01});
    }
  v.push_back({"add_bias", [=](DType t) {
                 Acts o(t, x), bias(t, b);
                 be().add_bias(s(), o.view(), bias.cview(), kRows, kCols);
                 return Outputs{{"out", o.values()}};
               }});
  v.push_back({"bias_backward", [=](DType t) {
                 Acts dout(t, d);
                 std::vector<float> db = b;
                 be().bias_backward(s(), db.data(), dout.cview(), kRows, kCols);
                 return Outputs{{"dbias", db}};
               }, 0.01});
  v.push_back({"layernorm", [=](DType t) {
                 Acts in(t, x), out(t, y), wt(t, w), bt(t, b);
                 std::vector<float> mean(kRows), rstd(kRows);
                 be().layernorm_forward(s(), out.view(), mean.data(), rstd.data(), in.cview(), wt.cview(), bt.cview(),
                                        kRows, kCols);
                 Acts din(t, y), dout(t, d);
                 std::vector<float> dw = w, db = b;
                 be().layernorm_backward(s(), din.view(), dw.data(), db.data(), dout.cview(), in.cview(), wt.cview(),
                                         mean.data(), rstd.data(), kRows, kCols);
                 return Outputs{{"out", out.values()}, {"mean", mean}, {"rstd", rstd}, {"dinp", din.values()},
                                {"dw", dw}, {"db", db}};
               }});
  v.push_back({"rmsnorm", [=](DType t) {
                 Acts in(t, x), out(t, y), wt(t, w);
                 std::vector<float> rstd(kRows);
                 be().rmsnorm_forward(s(), out.view(), rstd.data(), in.cview(), wt.cview(), kRows, kCols, 1e-5f);
                 Acts din(t, y), dout(t, d);
                 std::vector<float> dw = w;
                 be().rmsnorm_backward(s(), din.view(), dw.data(), dout.cview(), in.cview(), wt.cview(), rstd.data(),
                                       kRows, kCols);
                 return Outputs{{"out", out.values()}, {"rstd", rstd}, {"dinp", din.values()}, {"dw", dw}};
               }});
  v.push_back({"gelu", [=](DType t) {
                 Acts in(t, x), out(t, y), dout(t, d), din(t, y);
                 be().gelu_forward(s(), out.view(), in.cview(), x.size());
                 be().gelu_backward(s(), din.view(), in.cview(), dout.cview(), x.size());
                 return Outputs{{"out", out.values()}, {"dinp", din.values()}};
               }});
  v.push_back({"swiglu", [=](DType t) {
                 const int I = kCols / 2;
                 Acts gu(t, x), out(t, std::vector<float>(kRows * I)), dout(t, values(kRows * I, 9)), dgu(t, y);
                 be().swiglu_forward(s(), out.view(), gu.cview(), kRows, I);
                 be().swiglu_backward(s(), dgu.view(), gu.cview(), dout.cview(), kRows, I);
                 return Outputs{{"out", out.values()}, {"dgate_up", dgu.values()}};
               }});
  v.push_back({"add and fill", [=](DType t) {
                 Acts a(t, x), bb(t, y), out(t, d), filled(t, d);
                 be().add(s(), out.view(), a.cview(), bb.cview(), x.size());
                 be().fill(s(), filled.view(), -0.3125f, x.size());
                 return Outputs{{"out", out.values()}, {"filled", filled.values()}};
               }});
  v.push_back({"rope", [=](DType t) {
                 const int T = 3, heads = 2, hd = 8, stride = 20;
                 std::vector<float> table(2 * T * (hd / 2));
                 for (std::size_t i = 0; i < table.size(); ++i) table[i] = std::cos(0.37f * float(i));
                 Acts xr(t, x), xi(t, x);
                 be().rope(s(), xr.view(), table.data(), kRows, T, heads, hd, stride, false);
                 be().rope(s(), xi.view(), table.data(), kRows, T, heads, hd, stride, true);
                 return Outputs{{"rotated", xr.values()}, {"inverse", xi.values()}};
               }});
  v.push_back({"encoder", [=](DType t) {
                 const int B = 2, T = 3, C = 8, V = 5;
                 const std::vector<std::int32_t> tok{4, 1, 1, 0, 3, 1};
                 const std::vector<float> wte = values(V * C, 10), wpe = values(T * C, 11);
                 Acts out(t, std::vector<float>(B * T * C)), dout(t, values(B * T * C, 12));
                 be().encoder_forward(s(), out.view(), tok.data(), CView(wte.data()), CView(wpe.data()), B, T, C);
                 std::vector<float> dwte(V * C, 0.5f), dwpe(T * C, 0.25f);
                 be().encoder_backward(s(), dwte.data(), dwpe.data(), dout.cview(), tok.data(), B, T, C);
                 return Outputs{{"out", out.values()}, {"dwte", dwte}, {"dwpe", dwpe}};
               }});
  v.push_back({"softmax_xent", [=](DType t) {
                 const int N = 5, V = 37, Vp = 40;
                 const std::vector<std::int32_t> tgt{0, 36, 7, 7, 19};
                 Acts logits(t, values(N * Vp, 13, 3.0f));
                 std::vector<float> losses(N);
                 be().softmax_xent(s(), losses.data(), logits.view(), tgt.data(), N, V, Vp, 0.125f);
                 return Outputs{{"losses", losses}, {"dlogits", logits.values()}};
               }});
  for (AttentionShape a : {AttentionShape{2, 5, 2, 2, 8}, AttentionShape{1, 7, 4, 2, 8}, AttentionShape{2, 4, 3, 1, 6}}) {
    const std::size_t rows = std::size_t(a.B) * a.T;
    const std::vector<float> qkv = values(rows * a.qkv_width(), 14), dout = values(rows * a.out_width(), 15);
    v.push_back({"attention " + std::to_string(a.NH) + "/" + std::to_string(a.KVH) + " heads",
                 [=](DType t) {
                   Acts q(t, qkv), out(t, std::vector<float>(rows * a.out_width())), d(t, dout),
                       dq(t, std::vector<float>(qkv.size()));
                   std::vector<float> att(attention_saved_floats(DeviceKind::cpu, a, t)),
                       scratch(attention_scratch_floats(DeviceKind::cpu, a, t));
                   be().attention_forward(s(), out.view(), att.data(), scratch.data(), q.cview(), a);
                   be().attention_backward(s(), dq.view(), scratch.data(), d.cview(), q.cview(), out.cview(), att.data(),
                                           a);
                   return Outputs{{"out", out.values()}, {"dqkv", dq.values()}};
                 },
                 // Backward's softmax row sum is d . out from the stored (rounded) out with 16-bit
                 // activations, as the fused GPU kernels compute it, against sum(P dP) in fp32: an
                 // error of ~2^-9 |d||out| in each row's sum, which moves dq and dk by that times the
                 // scale and |k| or |q|, the same for every element of a row: 1% of the output's
                 // largest magnitude bounds it at these shapes.
                 8, 1e-2});
  }
  return v;
}

class ActivationDtype : public ::testing::TestWithParam<DType> {};

TEST_P(ActivationDtype, EveryOpMatchesItsFp32RunWithinOneUlpOfTheFormat) {
  const DType t = GetParam();
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Outputs want = c.op(DType::f32), got = c.op(t);
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [name, w] : want) {
      const std::vector<float>& g = got.at(name);
      ASSERT_EQ(g.size(), w.size()) << name;
      double mx = 0;
      for (float v : w) mx = std::max(mx, double(std::abs(v)));
      ASSERT_GT(mx, 0.0) << name << ": an output of zeros compares nothing";
      for (std::size_t i = 0; i < w.size(); ++i) {
        const double tol = c.rel_ulps * ulp(t) * std::max(std::abs(g[i]), std::abs(w[i])) + c.abs_tol * mx;
        ASSERT_NEAR(g[i], w[i], tol) << name << " element " << i;
      }
    }
  }
}

// Activations of one call share one dtype; the refusal names the op.
TEST_P(ActivationDtype, MixedActivationDtypesAreRefusedNamingTheOp) {
  const DType t = GetParam();
  Acts a(t, values(8, 1)), out(DType::f32, values(8, 2));
  try {
    be().gelu_forward(s(), out.view(), a.cview(), 8);
    FAIL() << "mixed dtypes accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("gelu_forward"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, ActivationDtype, ::testing::Values(DType::bf16, DType::f16),
                         [](const ::testing::TestParamInfo<DType>& i) {
                           return i.param == DType::bf16 ? "bf16" : "fp16";
                         });

}  // namespace
}  // namespace tz
