// Tests Backend::gelu_forward / gelu_backward on the cpu backend (core/elementwise.h math) against
// the tanh-approximation GELU in double and its finite-difference derivative.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "core/backend.h"
#include "tests/common/compare.h"
#include "tests/common/finite_diff.h"
#include "tests/common/random.h"
#include "tests/common/stream.h"

namespace tz {
namespace {

double gelu_ref(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

// A dense sweep of [-8, 8], random points, and large magnitudes where tanh saturates and cosh
// overflows in float (the derivative must come out 0 or 1, not NaN). 1003 elements: not a
// multiple of any vector width.
std::vector<float> gelu_inputs() {
  std::vector<float> x;
  for (int i = 0; i <= 800; ++i) x.push_back(-8.0f + 0.02f * float(i));
  test::Rng rng(30);
  for (float v : rng.floats(190, -5, 5)) x.push_back(v);
  for (float v : {0.0f, -0.0f, 1e-20f, -1e-20f, 12.0f, -12.0f, 50.0f, -50.0f, 1e4f, -1e4f, 3e5f, -3e5f})
    x.push_back(v);
  return x;
}

TEST(Gelu, ForwardMatchesTheTanhApproximationInDouble) {
  auto be = make_cpu_backend();
  const std::vector<float> x = gelu_inputs();
  std::vector<float> out(x.size(), NAN);
  be->gelu_forward(test::cpu_stream(), out.data(), x.data(), x.size());
  // About ten fp32 roundings (tanhf within 2 ulp) on values of size |x|; 1 - tanh cancels for
  // negative x, leaving an absolute error of a few ulp of |x|: 2e-6 * max(1, |x|) is ~10x that.
  std::vector<double> want(x.size()), tol(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    want[i] = gelu_ref(x[i]);
    tol[i] = 2e-6 * std::max(1.0, std::fabs(double(x[i])));
  }
  EXPECT_TRUE(test::all_within("gelu", out, want, tol));
}

TEST(Gelu, BackwardWritesDoutTimesTheFiniteDifferenceDerivative) {
  auto be = make_cpu_backend();
  const std::vector<float> x = gelu_inputs();
  test::Rng rng(31);
  const std::vector<float> dout = rng.floats(x.size());
  const std::vector<double> w = test::to_double(dout);
  // The loss is separable, so one perturbation per element of a 1003-term sum is cheap enough.
  const auto fd = test::central_differences(
      [&](const std::vector<double>& v) {
        double s = 0;
        for (std::size_t i = 0; i < v.size(); ++i) s += w[i] * gelu_ref(v[i]);
        return s;
      },
      test::to_double(x), 1e-4);
  std::vector<float> dinp(x.size(), NAN);  // written, not accumulated: NaN must be overwritten
  be->gelu_backward(test::cpu_stream(), dinp.data(), x.data(), dout.data(), x.size());
  // gelu' is O(1) (at most ~1.13) and computed with ~15 fp32 roundings; h = 1e-4 on |x| <= 3e5
  // keeps the finite-difference error below 1e-7 (its truncation term h^2 gelu''' / 6 is ~1e-9 and
  // cancellation ~1e-16 * |L| / h with |L| <= 1e5 is 1e-7). A wrong constant in gelu' is off by > 1e-3.
  EXPECT_TRUE(test::all_near("dinp", dinp, fd, 1e-5, 1e-5));
}

}  // namespace
}  // namespace tz
