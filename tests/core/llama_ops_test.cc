// Tests the Llama family's backend operations on the cpu backend against plain double loops: RMSNorm,
// rotary embedding (against angles computed in double), SwiGLU and grouped-query attention (2, 3, 4 and
// 7 query heads per key-value head, multi-query, and multi-head), forward directly and backward through
// central finite differences; and the encoder without a position table.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/elementwise.h"
#include "tests/common/compare.h"
#include "tests/common/finite_diff.h"
#include "tests/common/random.h"
#include "tests/common/stream.h"

namespace tz {
namespace {

constexpr double kEps = 1e-5;

std::vector<double> rmsnorm_ref(const std::vector<double>& x, const std::vector<double>& w, int N, int C) {
  std::vector<double> out(x.size());
  for (int n = 0; n < N; ++n) {
    double ms = 0;
    for (int c = 0; c < C; ++c) ms += x[n * C + c] * x[n * C + c];
    const double r = 1 / std::sqrt(ms / C + kEps);
    for (int c = 0; c < C; ++c) out[n * C + c] = x[n * C + c] * r * w[c];
  }
  return out;
}

TEST(RmsNorm, ForwardMatchesADoubleReferenceAndBackwardFiniteDifferences) {
  auto be = make_cpu_backend();
  test::Rng rng(60);
  for (auto [N, C] : {std::pair{3, 8}, {5, 37}, {2, 130}}) {
    SCOPED_TRACE("N=" + std::to_string(N) + " C=" + std::to_string(C));
    const std::vector<float> x = rng.floats(std::size_t(N) * C, -2, 2), w = rng.floats(C, 0.5, 1.5);
    const std::vector<float> dout = rng.floats(x.size());
    std::vector<float> out(x.size(), NAN), rstd(N, NAN);
    be->rmsnorm_forward(test::cpu_stream(), out.data(), rstd.data(), x.data(), cview(w.data()), N, C, float(kEps));
    EXPECT_TRUE(test::all_near("out", out, rmsnorm_ref(test::to_double(x), test::to_double(w), N, C), 1e-6, 1e-6));
    // Backward accumulates: start from 1 in dinp and 2 in dw and take them off after.
    std::vector<float> dinp(x.size(), 1.0f), dw(C, 2.0f);
    be->rmsnorm_backward(test::cpu_stream(), dinp.data(), dw.data(), dout.data(), x.data(), cview(w.data()),
                         rstd.data(), N, C);
    for (float& v : dinp) v -= 1.0f;
    for (float& v : dw) v -= 2.0f;
    const std::vector<double> L = test::to_double(dout), wd = test::to_double(w), xd = test::to_double(x);
    const auto fdx = test::central_differences([&](const std::vector<double>& v) { return test::dot(L, rmsnorm_ref(v, wd, N, C)); }, xd);
    const auto fdw = test::central_differences([&](const std::vector<double>& v) { return test::dot(L, rmsnorm_ref(xd, v, N, C)); }, wd);
    // O(1) sums of C <= 130 fp32 products, and the +1/-2 round trip (ulp of 2: 2.4e-7).
    EXPECT_TRUE(test::all_near("dinp", dinp, fdx, 2e-5, 1e-5));
    EXPECT_TRUE(test::all_near("dw", dw, fdw, 2e-5, 1e-5));
  }
}

// cos [T, hd/2] then sin [T, hd/2] of t * theta^(-2i/hd), in double.
std::vector<double> angles_table(int T, int hd, double theta) {
  std::vector<double> tab(2 * std::size_t(T) * (hd / 2));
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < hd / 2; ++i) {
      const double a = t * std::pow(theta, -2.0 * i / hd);
      tab[std::size_t(t) * (hd / 2) + i] = std::cos(a);
      tab[(std::size_t(T) + t) * (hd / 2) + i] = std::sin(a);
    }
  return tab;
}

// Rotates `heads` heads of hd in rows of `stride`, position n % T; the columns past heads*hd untouched.
std::vector<double> rope_ref(std::vector<double> x, int N, int T, int heads, int hd, int stride, double theta,
                             bool inverse) {
  for (int n = 0; n < N; ++n)
    for (int h = 0; h < heads; ++h)
      for (int i = 0; i < hd / 2; ++i) {
        const double a = (inverse ? -1 : 1) * (n % T) * std::pow(theta, -2.0 * i / hd);
        double& x1 = x[std::size_t(n) * stride + h * hd + i];
        double& x2 = x[std::size_t(n) * stride + h * hd + i + hd / 2];
        const double r1 = x1 * std::cos(a) - x2 * std::sin(a), r2 = x2 * std::cos(a) + x1 * std::sin(a);
        x1 = r1, x2 = r2;
      }
  return x;
}

TEST(Rope, RotatesLikeHuggingFacesRotateHalfAndItsInverseUndoesIt) {
  auto be = make_cpu_backend();
  test::Rng rng(61);
  const int B = 2, T = 7, heads = 3, hd = 8, stride = heads * hd + 5, N = B * T;
  const double theta = 10000;
  const std::vector<double> tab = angles_table(T, hd, theta);
  const std::vector<float> table(tab.begin(), tab.end());
  const std::vector<float> x = rng.floats(std::size_t(N) * stride, -2, 2);
  std::vector<float> y = x;
  be->rope(test::cpu_stream(), y.data(), table.data(), N, T, heads, hd, stride, false);
  // One rotation of O(1) values with the float-rounded cos/sin (2^-24 relative each).
  EXPECT_TRUE(test::all_near("rope", y, rope_ref(test::to_double(x), N, T, heads, hd, stride, theta, false), 1e-6, 1e-6));
  for (int n = 0; n < N; ++n)  // the columns after the heads (here: another tensor's) are left alone
    for (int c = heads * hd; c < stride; ++c) ASSERT_EQ(y[std::size_t(n) * stride + c], x[std::size_t(n) * stride + c]);
  std::vector<float> back = y;
  be->rope(test::cpu_stream(), back.data(), table.data(), N, T, heads, hd, stride, true);
  EXPECT_TRUE(test::all_near("inverse", back, rope_ref(test::to_double(y), N, T, heads, hd, stride, theta, true), 1e-6, 1e-6));
  EXPECT_TRUE(test::all_near("round trip", back, x, 2e-6, 0));
  // Position 0 is the identity, bit for bit.
  for (int c = 0; c < heads * hd; ++c) ASSERT_EQ(y[c], x[c]);
}

TEST(SwiGlu, ForwardIsTheSharedMathAndBackwardMatchesFiniteDifferences) {
  auto be = make_cpu_backend();
  test::Rng rng(62);
  const int N = 4, I = 19;
  std::vector<float> gu = rng.floats(std::size_t(N) * 2 * I, -4, 4);
  gu[0] = -100, gu[1] = 100;  // saturated gates: silu(-100) ~ 0 and silu(100) = 100, no NaN
  const std::vector<float> dout = rng.floats(std::size_t(N) * I);
  std::vector<float> out(std::size_t(N) * I, NAN), dgu(gu.size(), NAN);
  be->swiglu_forward(test::cpu_stream(), out.data(), gu.data(), N, I);
  auto ref = [&](const std::vector<double>& v) {
    std::vector<double> o(std::size_t(N) * I);
    for (int n = 0; n < N; ++n)
      for (int i = 0; i < I; ++i) {
        const double g = v[std::size_t(n) * 2 * I + i], u = v[std::size_t(n) * 2 * I + I + i];
        o[std::size_t(n) * I + i] = g / (1 + std::exp(-g)) * u;
      }
    return o;
  };
  // exp_f is within 2 ulp; the product of three roundings: 1e-6 relative.
  EXPECT_TRUE(test::all_near("out", out, ref(test::to_double(gu)), 1e-6, 1e-6));
  for (int n = 0; n < N; ++n)
    for (int i = 0; i < I; ++i)
      ASSERT_EQ(out[std::size_t(n) * I + i], math::swiglu(gu[std::size_t(n) * 2 * I + i], gu[std::size_t(n) * 2 * I + I + i]));
  be->swiglu_backward(test::cpu_stream(), dgu.data(), gu.data(), dout.data(), N, I);
  const std::vector<double> L = test::to_double(dout);
  const auto fd = test::central_differences([&](const std::vector<double>& v) { return test::dot(L, ref(v)); },
                                            test::to_double(gu));
  EXPECT_TRUE(test::all_near("dgate_up", dgu, fd, 1e-5, 1e-5));
}

// Grouped-query attention in double: qkv rows [q: NH*hd | k: KVH*hd | v: KVH*hd] -> out rows NH*hd.
std::vector<double> gqa_ref(const std::vector<double>& qkv, const AttentionShape& s) {
  const int W = s.qkv_width(), O = s.out_width(), G = s.group();
  std::vector<double> out(std::size_t(s.B) * s.T * O, 0.0);
  for (int b = 0; b < s.B; ++b)
    for (int h = 0; h < s.NH; ++h) {
      const int k0 = O + (h / G) * s.hd, v0 = O + s.KVH * s.hd + (h / G) * s.hd;
      for (int t = 0; t < s.T; ++t) {
        std::vector<double> p(t + 1);
        double mx = -HUGE_VAL, sum = 0;
        for (int u = 0; u <= t; ++u) {
          double dot = 0;
          for (int i = 0; i < s.hd; ++i)
            dot += qkv[(std::size_t(b) * s.T + t) * W + h * s.hd + i] * qkv[(std::size_t(b) * s.T + u) * W + k0 + i];
          p[u] = dot / std::sqrt(double(s.hd));
          mx = std::max(mx, p[u]);
        }
        for (int u = 0; u <= t; ++u) sum += (p[u] = std::exp(p[u] - mx));
        for (int u = 0; u <= t; ++u)
          for (int i = 0; i < s.hd; ++i)
            out[(std::size_t(b) * s.T + t) * O + h * s.hd + i] += p[u] / sum * qkv[(std::size_t(b) * s.T + u) * W + v0 + i];
      }
    }
  return out;
}

class GroupedQueryAttention : public ::testing::TestWithParam<AttentionShape> {};

TEST_P(GroupedQueryAttention, ForwardMatchesADoubleReferenceAndBackwardFiniteDifferences) {
  const AttentionShape s = GetParam();
  auto be = make_cpu_backend();
  test::Rng rng(63 + s.NH * 10 + s.KVH);
  const std::vector<float> qkv = rng.floats(std::size_t(s.B) * s.T * s.qkv_width(), -2, 2);
  const std::vector<float> dout = rng.floats(std::size_t(s.B) * s.T * s.out_width());
  std::vector<float> out(dout.size(), NAN), att(std::size_t(s.B) * s.NH * s.T * s.T, NAN);
  be->attention_forward(test::cpu_stream(), out.data(), att.data(), nullptr, qkv.data(), s);
  EXPECT_TRUE(test::all_near("out", out, gqa_ref(test::to_double(qkv), s), 2e-5, 1e-5));
  std::vector<float> dqkv(qkv.size(), NAN), datt(att.size(), NAN);
  be->attention_backward(test::cpu_stream(), dqkv.data(), datt.data(), dout.data(), qkv.data(), out.data(), att.data(), s);
  const std::vector<double> L = test::to_double(dout);
  const auto fd = test::central_differences([&](const std::vector<double>& x) { return test::dot(L, gqa_ref(x, s)); },
                                            test::to_double(qkv));
  // A key-value head's gradient sums its group's query heads: up to 7 x T x hd fp32 products of O(1).
  EXPECT_TRUE(test::all_near("dqkv", dqkv, fd, 3e-5, 1e-5));
}

// Query heads per key-value head 1 (multi-head), 2, 3, 4, 7 and multi-query (KVH = 1).
INSTANTIATE_TEST_SUITE_P(Ratios, GroupedQueryAttention,
                         ::testing::Values(AttentionShape{2, 5, 2, 2, 4}, AttentionShape{2, 6, 4, 2, 4},
                                           AttentionShape{1, 7, 6, 2, 6}, AttentionShape{1, 5, 8, 2, 4},
                                           AttentionShape{1, 4, 7, 1, 4}, AttentionShape{2, 5, 3, 1, 8}),
                         [](const ::testing::TestParamInfo<AttentionShape>& i) {
                           return "NH" + std::to_string(i.param.NH) + "_KVH" + std::to_string(i.param.KVH) + "_hd" +
                                  std::to_string(i.param.hd);
                         });

// With one key-value head per query head the grouped kernels are GPT-2's: AttentionShape::multi_head
// of [B,T,3C] gives the same bits as the shape spelled out.
TEST(GroupedQueryAttentionShape, MultiHeadIsGpt2sLayout) {
  const AttentionShape a = AttentionShape::multi_head(2, 5, 12, 3);
  EXPECT_EQ(a.NH, 3);
  EXPECT_EQ(a.KVH, 3);
  EXPECT_EQ(a.hd, 4);
  EXPECT_EQ(a.qkv_width(), 36);
  EXPECT_EQ(a.out_width(), 12);
  EXPECT_EQ(a.group(), 1);
}

TEST(Encoder, WithoutAPositionTableCopiesTheTokensRowAndItsGradientGoesToThatRowOnly) {
  auto be = make_cpu_backend();
  test::Rng rng(64);
  const int B = 2, T = 3, C = 5, V = 4;
  const std::vector<float> wte = rng.floats(std::size_t(V) * C);
  const std::vector<std::int32_t> tokens{3, 1, 3, 0, 2, 1};
  std::vector<float> out(std::size_t(B) * T * C, NAN);
  be->encoder_forward(test::cpu_stream(), out.data(), tokens.data(), cview(wte.data()), CView{nullptr, DType::f32}, B,
                      T, C);
  for (int n = 0; n < B * T; ++n)
    for (int c = 0; c < C; ++c) ASSERT_EQ(out[std::size_t(n) * C + c], wte[std::size_t(tokens[n]) * C + c]);
  const std::vector<float> dout = rng.floats(out.size());
  std::vector<float> dwte(wte.size(), 0.0f);
  be->encoder_backward(test::cpu_stream(), dwte.data(), nullptr, dout.data(), tokens.data(), B, T, C);
  std::vector<double> want(wte.size(), 0.0);
  for (int n = 0; n < B * T; ++n)
    for (int c = 0; c < C; ++c) want[std::size_t(tokens[n]) * C + c] += dout[std::size_t(n) * C + c];
  EXPECT_TRUE(test::all_near("dwte", dwte, want, 1e-6, 0));
}

}  // namespace
}  // namespace tz
