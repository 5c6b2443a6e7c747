// Tests Backend::attention_forward / attention_backward on the cpu backend: causal multi-head
// attention against a double reference, causality, and dqkv against finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/backend.h"
#include "tests/common/compare.h"
#include "tests/common/finite_diff.h"
#include "tests/common/random.h"
#include "tests/common/stream.h"

namespace tz {
namespace {

struct Shape {
  int B, T, C, NH;
};
// The brief's small shape, a longer sequence with three heads of odd size 5, and T = 1.
constexpr Shape kShapes[] = {{2, 5, 8, 2}, {1, 17, 15, 3}, {3, 1, 4, 1}};

struct AttRef {
  std::vector<double> out, att;
};

// qkv [B,T,3C] -> out [B,T,C], att [B,NH,T,T] (zero above the diagonal).
AttRef attention_ref(const std::vector<double>& qkv, Shape s) {
  const int B = s.B, T = s.T, C = s.C, NH = s.NH, hs = C / NH;
  AttRef r{std::vector<double>(std::size_t(B) * T * C), std::vector<double>(std::size_t(B) * NH * T * T)};
  auto at = [&](int b, int t, int part, int h, int i) {
    return qkv[(std::size_t(b) * T + t) * 3 * C + part * C + h * hs + i];
  };
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        std::vector<double> p(t + 1);
        double mx = -HUGE_VAL, sum = 0;
        for (int t2 = 0; t2 <= t; ++t2) {
          double dot = 0;
          for (int i = 0; i < hs; ++i) dot += at(b, t, 0, h, i) * at(b, t2, 1, h, i);
          p[t2] = dot / std::sqrt(double(hs));
          mx = std::max(mx, p[t2]);
        }
        for (int t2 = 0; t2 <= t; ++t2) sum += (p[t2] = std::exp(p[t2] - mx));
        for (int t2 = 0; t2 <= t; ++t2) {
          p[t2] /= sum;
          r.att[((std::size_t(b) * NH + h) * T + t) * T + t2] = p[t2];
          for (int i = 0; i < hs; ++i)
            r.out[(std::size_t(b) * T + t) * C + h * hs + i] += p[t2] * at(b, t2, 2, h, i);
        }
      }
  return r;
}

std::string label(Shape s) {
  return "B=" + std::to_string(s.B) + " T=" + std::to_string(s.T) + " C=" + std::to_string(s.C) +
         " NH=" + std::to_string(s.NH);
}

TEST(Attention, ForwardMatchesADoubleReference) {
  auto be = make_cpu_backend();
  test::Rng rng(50);
  for (Shape s : kShapes) {
    SCOPED_TRACE(label(s));
    const std::vector<float> qkv = rng.floats(std::size_t(s.B) * s.T * 3 * s.C, -2, 2);
    // NaN everywhere first: every element of out and att, masked ones included, must be written.
    std::vector<float> out(std::size_t(s.B) * s.T * s.C, NAN), att(std::size_t(s.B) * s.NH * s.T * s.T, NAN);
    be->attention_forward(test::cpu_stream(), out.data(), att.data(), nullptr, qkv.data(), s.B, s.T, s.C, s.NH);
    const AttRef ref = attention_ref(test::to_double(qkv), s);
    // Scores are fp32 dot products of hs <= 8 terms of size <= 4 (error < 1e-5), exp and the
    // normalising sum over <= 17 terms add a few ulp; probabilities and outputs (|v| <= 2) are
    // within 1e-5 absolute. Masked probabilities must be exactly 0.
    EXPECT_TRUE(test::all_near("att", att, ref.att, 1e-5, 0));
    EXPECT_TRUE(test::all_near("out", out, ref.out, 2e-5, 1e-5));
    for (int b = 0; b < s.B; ++b)
      for (int h = 0; h < s.NH; ++h)
        for (int t = 0; t < s.T; ++t)
          for (int t2 = t + 1; t2 < s.T; ++t2)
            ASSERT_EQ(att[((std::size_t(b) * s.NH + h) * s.T + t) * s.T + t2], 0.0f)
                << b << " " << h << " " << t;
  }
}

TEST(Attention, ChangingAFutureTokensKeyOrValueLeavesEarlierOutputsUnchanged) {
  auto be = make_cpu_backend();
  test::Rng rng(51);
  const Shape s{2, 9, 12, 3};
  const std::vector<float> qkv = rng.floats(std::size_t(s.B) * s.T * 3 * s.C, -2, 2);
  std::vector<float> out0(std::size_t(s.B) * s.T * s.C), att(std::size_t(s.B) * s.NH * s.T * s.T);
  be->attention_forward(test::cpu_stream(), out0.data(), att.data(), nullptr, qkv.data(), s.B, s.T, s.C, s.NH);
  for (int b = 0; b < s.B; ++b) {
    for (int t0 : {1, 4, s.T - 1}) {
      SCOPED_TRACE(testing::Message() << "batch " << b << ", changed position " << t0);
      std::vector<float> changed = qkv;
      for (int i = s.C; i < 3 * s.C; ++i)
        changed[(std::size_t(b) * s.T + t0) * 3 * s.C + i] += 1.5f;  // k and v
      std::vector<float> out(out0.size());
      be->attention_forward(test::cpu_stream(), out.data(), att.data(), nullptr, changed.data(), s.B, s.T, s.C, s.NH);
      for (int bb = 0; bb < s.B; ++bb)
        for (int t = 0; t < s.T; ++t) {
          bool differs = false;
          for (int c = 0; c < s.C; ++c) {
            const std::size_t i = (std::size_t(bb) * s.T + t) * s.C + c;
            differs |= out[i] != out0[i];
          }
          // Earlier positions and the other sequence are bitwise unchanged; position t0 and later
          // ones in the same sequence do see the change (so the perturbation was not a no-op).
          EXPECT_EQ(differs, bb == b && t >= t0) << "sequence " << bb << " position " << t;
        }
    }
  }
}

TEST(Attention, BackwardMatchesFiniteDifferencesAndOverwritesDqkv) {
  auto be = make_cpu_backend();
  test::Rng rng(52);
  for (Shape s : kShapes) {
    SCOPED_TRACE(label(s));
    const std::vector<float> qkv = rng.floats(std::size_t(s.B) * s.T * 3 * s.C, -2, 2);
    const std::vector<float> dout = rng.floats(std::size_t(s.B) * s.T * s.C);
    std::vector<float> out(dout.size()), att(std::size_t(s.B) * s.NH * s.T * s.T);
    be->attention_forward(test::cpu_stream(), out.data(), att.data(), nullptr, qkv.data(), s.B, s.T, s.C, s.NH);
    // dqkv is written, not accumulated, and datt is scratch: NaN in both must not leak through.
    std::vector<float> dqkv(qkv.size(), NAN), datt(att.size(), NAN);
    be->attention_backward(test::cpu_stream(), dqkv.data(), datt.data(), dout.data(), qkv.data(), out.data(), att.data(),
                           s.B, s.T, s.C, s.NH);

    const std::vector<double> L = test::to_double(dout);
    const auto fd = test::central_differences(
        [&](const std::vector<double>& x) { return test::dot(L, attention_ref(x, s).out); },
        test::to_double(qkv));
    // Gradients are O(1) sums of at most T * hs <= 85 fp32 products of O(1) factors (the saved
    // fp32 probabilities carry ~1e-6 of error): within 1e-5 absolute + 1e-5 relative; central
    // differences with h = 1e-5 on O(1) inputs are accurate to ~1e-9. A missing 1/sqrt(hs) or a
    // dropped softmax term is off by > 0.1.
    EXPECT_TRUE(test::all_near("dqkv", dqkv, fd, 1e-5, 1e-5));
  }
}

}  // namespace
}  // namespace tz
