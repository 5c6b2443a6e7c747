// Tests Backend::softmax_xent on the cpu backend: losses against -log softmax in double, dlogits
// against finite differences of the scaled loss, and exactly zero gradient in padded columns.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/backend.h"
#include "tests/common/compare.h"
#include "tests/common/finite_diff.h"
#include "tests/common/random.h"
#include "tests/common/stream.h"

namespace tz {
namespace {

// N rows of Vp columns, of which the first V are real (V and Vp not multiples of 16).
constexpr int N = 6, V = 11, Vp = 21;

// -log softmax(logits[n, :V])[target[n]] per row, by log-sum-exp in double.
std::vector<double> xent_ref(const std::vector<double>& logits, const std::vector<std::int32_t>& targets) {
  std::vector<double> loss(N);
  for (int n = 0; n < N; ++n) {
    const double* row = &logits[std::size_t(n) * Vp];
    double mx = -HUGE_VAL, sum = 0;
    for (int v = 0; v < V; ++v) mx = std::max(mx, row[v]);
    for (int v = 0; v < V; ++v) sum += std::exp(row[v] - mx);
    loss[n] = mx + std::log(sum) - row[targets[n]];
  }
  return loss;
}

// fp32 exp, log and an 11-term sum are good to a few ulp of the loss, plus a few ulp of the row's
// largest logit (the max is subtracted in fp32): 8 * 2^-24 * (max|logit| + loss) + 1e-6.
std::vector<double> loss_tolerance(const std::vector<float>& logits, const std::vector<double>& loss) {
  std::vector<double> tol(N);
  for (int n = 0; n < N; ++n) {
    double mx = 0;
    for (int v = 0; v < V; ++v) mx = std::max(mx, std::fabs(double(logits[std::size_t(n) * Vp + v])));
    tol[n] = 8 * std::ldexp(mx + std::fabs(loss[n]), -24) + 1e-6;
  }
  return tol;
}

struct Inputs {
  std::vector<float> logits;
  std::vector<std::int32_t> targets;
};

// Real columns random in [-3, 3] (row 3 shifted by +1000: the max subtraction must keep exp finite);
// padded columns NaN, which must neither reach the loss nor survive into the gradient.
Inputs make_inputs(test::Rng& rng) {
  Inputs in{std::vector<float>(std::size_t(N) * Vp, std::numeric_limits<float>::quiet_NaN()),
            std::vector<std::int32_t>(N)};
  for (int n = 0; n < N; ++n) {
    for (int v = 0; v < V; ++v)
      in.logits[std::size_t(n) * Vp + v] = float(rng.uniform(-3, 3) + (n == 3 ? 1000 : 0));
    in.targets[n] = n == 0 ? 0 : n == 1 ? V - 1 : rng.below(V);  // the first and last columns too
  }
  return in;
}

TEST(SoftmaxXent, LossIsMinusLogSoftmaxOfTheTarget) {
  auto be = make_cpu_backend();
  test::Rng rng(60);
  Inputs in = make_inputs(rng);
  const auto want = xent_ref(test::to_double(in.logits), in.targets);
  const auto tol = loss_tolerance(in.logits, want);
  std::vector<float> losses(N, NAN);
  be->softmax_xent(test::cpu_stream(), losses.data(), in.logits.data(), in.targets.data(), N, V, Vp, 1.0f / N);
  EXPECT_TRUE(test::all_within("loss", losses, want, tol));
}

TEST(SoftmaxXent, GradientMatchesFiniteDifferencesAndPaddedColumnsGetExactlyZero) {
  auto be = make_cpu_backend();
  test::Rng rng(61);
  Inputs in = make_inputs(rng);
  for (int v = 0; v < V; ++v) in.logits[3 * Vp + v] -= 1000;  // O(1) logits for h = 1e-5
  const float dloss = 0.37f;
  const std::vector<double> x = test::to_double(in.logits);

  std::vector<float> grad = in.logits, losses(N);
  be->softmax_xent(test::cpu_stream(), losses.data(), grad.data(), in.targets.data(), N, V, Vp, dloss);

  // d(dloss * sum_n loss_n) / dlogits over the real columns; padded columns must be exactly 0.
  std::vector<double> real(x);
  for (auto& v : real)
    if (std::isnan(v)) v = 0;  // the reference reads only the first V columns
  const auto fd = test::central_differences(
      [&](const std::vector<double>& l) {
        double s = 0;
        for (double loss : xent_ref(l, in.targets)) s += dloss * loss;
        return s;
      },
      real);
  std::vector<float> got_real;
  std::vector<double> want_real;
  for (int n = 0; n < N; ++n) {
    for (int v = 0; v < Vp; ++v) {
      const std::size_t i = std::size_t(n) * Vp + v;
      if (v >= V) {
        ASSERT_EQ(grad[i], 0.0f) << "padded column " << v << " of row " << n;
        ASSERT_FALSE(std::signbit(grad[i])) << "padded column " << v << " of row " << n;
      } else {
        got_real.push_back(grad[i]);
        want_real.push_back(fd[i]);
      }
    }
  }
  // Softmax probabilities (<= 1) from fp32 exp and an 11-term sum are within a few ulp, 2e-7
  // absolute, before scaling by dloss < 1; finite differences of log-sum-exp with h = 1e-5 are good
  // to ~1e-10. A gradient without dloss, or with mass leaking to padded columns, is off by > 1e-2.
  EXPECT_TRUE(test::all_near("dlogits", got_real, want_real, 2e-7, 2e-6));
}

// The loss must follow from log-sum-exp, not from log(probability): a target logit 200 below the
// maximum has probability e^-200, which underflows fp32 to 0 (log 0 = -Inf) although the loss,
// about 200, is an ordinary number.
TEST(SoftmaxXent, LossStaysAccurateWhenTheTargetIsFarBelowTheMaximum) {
  auto be = make_cpu_backend();
  test::Rng rng(62);
  Inputs in = make_inputs(rng);
  for (int n = 0; n < N; ++n) in.logits[std::size_t(n) * Vp + in.targets[n]] -= 90.0f + 30.0f * float(n);
  const auto want = xent_ref(test::to_double(in.logits), in.targets);
  const auto tol = loss_tolerance(in.logits, want);
  std::vector<float> losses(N), grad = in.logits;
  be->softmax_xent(test::cpu_stream(), losses.data(), grad.data(), in.targets.data(), N, V, Vp, 1.0f);
  EXPECT_TRUE(test::all_within("loss", losses, want, tol));
  // The target's probability is ~0, so its gradient is ~-1.
  for (int n = 0; n < N; ++n) EXPECT_NEAR(grad[std::size_t(n) * Vp + in.targets[n]], -1.0f, 1e-6f) << n;
}

}  // namespace
}  // namespace tz
