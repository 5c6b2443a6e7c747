// Tests Backend::add_bias and Backend::bias_backward on the cpu backend: forward against a double
// reference for each parameter dtype, backward against finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/backend.h"
#include "tests/common/compare.h"
#include "tests/common/finite_diff.h"
#include "tests/common/random.h"
#include "tests/common/typed_params.h"
#include "tests/common/stream.h"

namespace tz {
namespace {

// rows x cols, with cols past one 64-column block so the blocked column loops have a remainder.
constexpr int kRows = 37, kCols = 70;

std::vector<double> add_bias_ref(const std::vector<double>& out, const std::vector<double>& bias) {
  std::vector<double> r = out;
  for (int i = 0; i < kRows; ++i)
    for (int c = 0; c < kCols; ++c) r[std::size_t(i) * kCols + c] += bias[c];
  return r;
}

TEST(AddBias, AddsTheBiasToEveryRowForEachParamDtype) {
  auto be = make_cpu_backend();
  test::Rng rng(10);
  for (DType dt : test::kParamDtypes) {
    SCOPED_TRACE(test::dtype_label(dt));
    std::vector<float> out = rng.floats(std::size_t(kRows) * kCols, -4, 4);
    test::TypedParams bias(rng.floats(kCols), dt);
    const std::vector<double> sum = add_bias_ref(test::to_double(out), bias.values());
    // One fp32 addition is correctly rounded, and rounding the exact double sum to float gives the
    // same result (53 >= 2*24 + 2), so the output must match bitwise.
    std::vector<float> want(sum.begin(), sum.end());
    be->add_bias(test::cpu_stream(), out.data(), bias.view(), kRows, kCols);
    EXPECT_TRUE(test::all_near("out", out, want, 0, 0));
  }
}

TEST(BiasBackward, AddsTheFiniteDifferenceGradientToDbias) {
  auto be = make_cpu_backend();
  test::Rng rng(11);
  const std::vector<double> out0 = test::to_double(rng.floats(std::size_t(kRows) * kCols));
  const std::vector<float> dout = rng.floats(std::size_t(kRows) * kCols);  // L = sum dout * out
  const std::vector<double> w = test::to_double(dout);
  const std::vector<float> dbias0 = rng.floats(kCols);

  const std::vector<double> fd = test::central_differences(
      [&](const std::vector<double>& bias) { return test::dot(w, add_bias_ref(out0, bias)); },
      test::to_double(rng.floats(kCols)));

  std::vector<float> dbias = dbias0;
  be->bias_backward(test::cpu_stream(), dbias.data(), dout.data(), kRows, kCols);
  // dbias += sum over rows: an fp32 sum of kRows + 1 terms is within (kRows + 1) * 2^-24 * sum of
  // their magnitudes; the finite differences of this linear function are exact to ~1e-10.
  std::vector<double> want(kCols), tol(kCols);
  for (int c = 0; c < kCols; ++c) {
    double mag = std::fabs(dbias0[c]);
    for (int i = 0; i < kRows; ++i) mag += std::fabs(w[std::size_t(i) * kCols + c]);
    want[c] = dbias0[c] + fd[c];
    tol[c] = (kRows + 2) * std::ldexp(1.0, -24) * mag + 1e-9;
  }
  EXPECT_TRUE(test::all_within("dbias", dbias, want, tol));
}

}  // namespace
}  // namespace tz
