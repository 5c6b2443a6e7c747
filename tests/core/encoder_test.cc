// Tests Backend::encoder_forward / encoder_backward on the cpu backend: token + position embeddings
// against a double reference for each parameter dtype, and the gradient against finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/backend.h"
#include "tests/common/compare.h"
#include "tests/common/finite_diff.h"
#include "tests/common/random.h"
#include "tests/common/typed_params.h"
#include "tests/common/stream.h"

namespace tz {
namespace {

// C = 70 spans two 64-channel blocks; tokens use only ids < 5 of a 7-row table, so rows repeat
// (accumulation across positions) and two rows are never used (their gradient must stay as it was).
constexpr int B = 2, T = 5, C = 70, kVocab = 7, kUsedVocab = 5;

std::vector<std::int32_t> make_tokens(test::Rng& rng) {
  std::vector<std::int32_t> tokens(B * T);
  for (auto& t : tokens) t = rng.below(kUsedVocab);
  return tokens;
}

std::vector<double> encoder_ref(const std::vector<std::int32_t>& tokens, const std::vector<double>& wte,
                                const std::vector<double>& wpe) {
  std::vector<double> out(std::size_t(B) * T * C);
  for (int n = 0; n < B * T; ++n)
    for (int c = 0; c < C; ++c)
      out[std::size_t(n) * C + c] = wte[std::size_t(tokens[n]) * C + c] + wpe[std::size_t(n % T) * C + c];
  return out;
}

TEST(Encoder, ForwardAddsTokenAndPositionEmbeddingsForEachParamDtype) {
  auto be = make_cpu_backend();
  test::Rng rng(20);
  for (DType dt : test::kParamDtypes) {
    SCOPED_TRACE(test::dtype_label(dt));
    const auto tokens = make_tokens(rng);
    test::TypedParams wte(rng.floats(std::size_t(kVocab) * C), dt), wpe(rng.floats(std::size_t(T) * C), dt);
    std::vector<float> out(std::size_t(B) * T * C, NAN);
    be->encoder_forward(test::cpu_stream(), out.data(), tokens.data(), wte.view(), wpe.view(), B, T, C);
    // One fp32 addition of the two stored values: bitwise equal to the double sum rounded to float.
    const auto sum = encoder_ref(tokens, wte.values(), wpe.values());
    EXPECT_TRUE(test::all_near("out", out, std::vector<float>(sum.begin(), sum.end()), 0, 0));
  }
}

TEST(Encoder, BackwardAccumulatesTheFiniteDifferenceGradientIntoDwteAndDwpe) {
  auto be = make_cpu_backend();
  test::Rng rng(21);
  const auto tokens = make_tokens(rng);
  const std::vector<double> wte = test::to_double(rng.floats(std::size_t(kVocab) * C));
  const std::vector<double> wpe = test::to_double(rng.floats(std::size_t(T) * C));
  const std::vector<float> dout = rng.floats(std::size_t(B) * T * C);
  const std::vector<double> w = test::to_double(dout);
  const std::vector<float> dwte0 = rng.floats(wte.size()), dwpe0 = rng.floats(wpe.size());

  const auto fd_wte = test::central_differences(
      [&](const std::vector<double>& x) { return test::dot(w, encoder_ref(tokens, x, wpe)); }, wte);
  const auto fd_wpe = test::central_differences(
      [&](const std::vector<double>& x) { return test::dot(w, encoder_ref(tokens, wte, x)); }, wpe);

  std::vector<float> dwte = dwte0, dwpe = dwpe0;
  be->encoder_backward(test::cpu_stream(), dwte.data(), dwpe.data(), dout.data(), tokens.data(), B, T, C);

  // Each gradient element is an fp32 sum of at most B*T + 1 terms of magnitude <= 1: within
  // (B*T + 1) * 2^-24 * (B*T + 1) < 1e-5; the finite differences of a linear function are exact to ~1e-10.
  const double tol = 1e-5;
  std::vector<double> want_wte(wte.size()), want_wpe(wpe.size());
  for (std::size_t i = 0; i < wte.size(); ++i) want_wte[i] = dwte0[i] + fd_wte[i];
  for (std::size_t i = 0; i < wpe.size(); ++i) want_wpe[i] = dwpe0[i] + fd_wpe[i];
  EXPECT_TRUE(test::all_near("dwte", dwte, want_wte, tol, 0));
  EXPECT_TRUE(test::all_near("dwpe", dwpe, want_wpe, tol, 0));
  // Rows no token uses are untouched, bit for bit.
  for (std::size_t i = std::size_t(kUsedVocab) * C; i < dwte.size(); ++i) ASSERT_EQ(dwte[i], dwte0[i]) << i;
}

}  // namespace
}  // namespace tz
