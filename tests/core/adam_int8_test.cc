// AdamW with int8 moments (core/adam_int8.h): against the numpy reference of blockwise 8-bit Adam
// (tests/core/adam_int8_reference.py), and its edge cases.
#include "core/adam_int8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/blockwise_quant.h"
#include "core/stochastic_round.h"

namespace tz {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// AdamW's coefficients at step t, as the CPU Adam derives them (bias corrections in double, once).
math::AdamCoeffs coeffs(int t, float lr = 1e-3f, float wd = 0.01f) {
  math::AdamCoeffs c{};
  c.lr = lr, c.beta1 = 0.9f, c.beta2 = 0.999f, c.eps = 1e-8f, c.weight_decay = wd, c.grad_scale = 1.0f;
  c.step_size = float(double(lr) / (1.0 - std::pow(0.9, t)));
  c.inv_bias2_sqrt = float(1.0 / std::sqrt(1.0 - std::pow(0.999, t)));
  return c;
}

// The states of n elements: fp32 or bf16 master, int8 moments (all codes of 0 to start), block by block.
struct States {
  std::size_t n;
  std::vector<float> p;
  std::vector<bf16> pb;
  std::vector<std::uint8_t> m, v;
  std::vector<float> m_abs, v_abs;
  explicit States(const std::vector<float>& p0)
      : n(p0.size()),
        p(p0),
        m(n, nearest_code(dynamic_map(true), 0.0f)),
        v(n, nearest_code(dynamic_map(false), 0.0f)),
        m_abs(quant_blocks(n), 0.0f),
        v_abs(quant_blocks(n), 0.0f) {
    for (float x : p0) pb.push_back(float_to_bf16(x));
  }
  void step(const math::AdamCoeffs& c, const std::vector<float>& g, bool bf16_master, std::uint64_t seed,
            int t) {
    for (std::size_t b = 0, at = 0; at < n; ++b, at += kQuantBlock) {
      const std::size_t k = std::min(kQuantBlock, n - at);
      Int8Moments s{m.data() + at, &m_abs[b], v.data() + at, &v_abs[b]};
      if (bf16_master)
        adamw_int8_block_bf16(c, pb.data() + at, g.data() + at, k, s, SrKey{seed, std::uint64_t(t), at});
      else
        adamw_int8_block(c, p.data() + at, g.data() + at, k, s);
    }
  }
  float param(std::size_t i, bool bf16_master) const { return bf16_master ? bf16_to_float(pb[i]) : p[i]; }
};

std::uint32_t bits(float f) { return float_bits(f); }

// 4 blocks (the last of 77 elements): block 0 ordinary gradients, block 1 all zero (its moments stay 0),
// block 2 with NaN and inf elements at some steps, block 3 gradients of very different sizes.
std::vector<float> gradient(std::mt19937& rng, std::size_t n, int t) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> g(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t b = i / kQuantBlock;
    g[i] = b == 1 ? 0.0f : nd(rng) * (b == 3 ? std::pow(10.0f, -float(i % 6)) : 0.01f);
  }
  if (t % 2 == 0)
    g[2 * kQuantBlock + 5] = kNaN, g[2 * kQuantBlock + 9] = kInf, g[2 * kQuantBlock + 17] = -kInf;
  return g;
}

// Skips unless the numpy reference can run; otherwise runs it on `in` and returns its output.
bool reference_available(std::string* why) {
  if (!std::getenv("TZ_SOURCE_DIR")) {
    *why = "TZ_SOURCE_DIR is not set (ctest sets it): the reference script cannot be found";
    return false;
  }
  if (std::system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0) {
    *why =
        "/usr/bin/python3 with numpy is missing (scripts/install-deps.sh installs python3-torch, which "
        "brings it)";
    return false;
  }
  return true;
}

nlohmann::json run_reference(const nlohmann::json& in) {
  char dir[] = "/tmp/adam_int8_test.XXXXXX";
  if (!mkdtemp(dir)) return nullptr;
  const std::string in_path = std::string(dir) + "/in.json", out_path = std::string(dir) + "/out.json";
  std::ofstream(in_path) << in.dump();
  const std::string cmd = std::string("/usr/bin/python3 ") + std::getenv("TZ_SOURCE_DIR") +
                          "/tests/core/adam_int8_reference.py " + in_path + " " + out_path;
  nlohmann::json ref;
  if (std::system(cmd.c_str()) == 0) ref = nlohmann::json::parse(std::ifstream(out_path));
  std::remove(in_path.c_str()), std::remove(out_path.c_str()), rmdir(dir);
  return ref;
}

// The reference's input: n, the master's format, the seed, the starting parameters; steps are appended.
nlohmann::json reference_input(const std::vector<float>& p0, bool bf16_master, const char* moments) {
  nlohmann::json in = {{"n", p0.size()},
                       {"master", bf16_master ? "bf16-sr" : "fp32"},
                       {"seed", 77},
                       {"moments", moments},
                       {"steps", nlohmann::json::array()}};
  for (float x : p0) in["p"].push_back(bits(x));
  return in;
}

void add_step(nlohmann::json& in, int t, const math::AdamCoeffs& c, const std::vector<float>& g) {
  nlohmann::json st = {{"step", t}};
  for (float x : {c.lr, c.beta1, c.beta2, c.eps, c.weight_decay, c.grad_scale, c.step_size, c.inv_bias2_sqrt})
    st["coeffs"].push_back(bits(x));
  for (float x : g) st["g"].push_back(bits(x));
  in["steps"].push_back(st);
}

// n random starting parameters (exact bf16 values for a bf16 master).
std::vector<float> start(std::mt19937& rng, std::size_t n, bool bf16_master) {
  std::normal_distribution<float> nd(0.0f, 0.02f);
  std::vector<float> p0(n);
  for (float& x : p0) x = nd(rng);
  if (bf16_master)
    for (float& x : p0) x = bf16_to_float(float_to_bf16(x));  // the master starts as bf16
  return p0;
}

class Int8AdamReference : public ::testing::TestWithParam<bool> {};

// Five steps on 845 random elements: every code and absmax equal to the reference's, every parameter
// within one ulp of it (fp32 master) or equal (bf16 master, stochastic rounding included).
TEST_P(Int8AdamReference, FiveStepsGiveTheReferencesCodesAndParameters) {
  const bool bf16_master = GetParam();
  std::string why;
  if (!reference_available(&why)) GTEST_SKIP() << why;
  const std::size_t n = 3 * kQuantBlock + 77;
  std::mt19937 rng(1234);
  const std::vector<float> p0 = start(rng, n, bf16_master);
  States s(p0);
  nlohmann::json in = reference_input(p0, bf16_master, "int8");
  for (int t = 1; t <= 5; ++t) {
    const math::AdamCoeffs c = coeffs(t);
    const std::vector<float> g = gradient(rng, n, t);
    s.step(c, g, bf16_master, 77, t);
    add_step(in, t, c, g);
  }
  const nlohmann::json ref = run_reference(in);
  ASSERT_FALSE(ref.is_null()) << "the reference script failed";
  int exact = 0;
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(s.m[i], ref["m"][i].get<int>()) << "m code " << i;
    EXPECT_EQ(s.v[i], ref["v"][i].get<int>()) << "v code " << i;
    const std::uint32_t want = ref["p"][i].get<std::uint32_t>(), got = bits(s.param(i, bf16_master));
    EXPECT_LE(std::llabs(std::int64_t(got) - std::int64_t(want)), bf16_master ? 0 : 1) << "parameter " << i;
    exact += got == want;
  }
  for (std::size_t b = 0; b < quant_blocks(n); ++b) {
    EXPECT_EQ(bits(s.m_abs[b]), ref["m_absmax"][b].get<std::uint32_t>()) << "m absmax of block " << b;
    EXPECT_EQ(bits(s.v_abs[b]), ref["v_absmax"][b].get<std::uint32_t>()) << "v absmax of block " << b;
  }
  std::printf("%d of %zu parameters equal to the reference's bits\n", exact, n);
  EXPECT_EQ(s.m_abs[1], 0.0f);  // the all-zero block
  EXPECT_EQ(s.v_abs[1], 0.0f);
}

INSTANTIATE_TEST_SUITE_P(Masters, Int8AdamReference, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Bf16StochasticMaster" : "Fp32Master"; });

class Bf16MomentAdamReference : public ::testing::TestWithParam<bool> {};

// bf16 moments (adamw_bf16m_block*): five steps on the same 845 elements and gradients (an all-zero
// stretch, NaN/inf elements, six decades of sizes): every m and v bit and every parameter bit equal to
// the reference's, both masters.
TEST_P(Bf16MomentAdamReference, FiveStepsGiveTheReferencesBits) {
  const bool bf16_master = GetParam();
  std::string why;
  if (!reference_available(&why)) GTEST_SKIP() << why;
  const std::size_t n = 3 * kQuantBlock + 77;
  std::mt19937 rng(4321);
  const std::vector<float> p0 = start(rng, n, bf16_master);
  std::vector<float> p = p0;
  std::vector<bf16> pb, m(n, bf16{0}), v(n, bf16{0});
  for (float x : p0) pb.push_back(float_to_bf16(x));
  nlohmann::json in = reference_input(p0, bf16_master, "bf16");
  for (int t = 1; t <= 5; ++t) {
    const math::AdamCoeffs c = coeffs(t);
    const std::vector<float> g = gradient(rng, n, t);
    // In two calls, split inside a block: the bf16 format has no blocks, and the key is the element's.
    for (std::size_t at : {std::size_t(0), std::size_t(300)}) {
      const std::size_t len = at == 0 ? 300 : n - 300;
      if (bf16_master)
        adamw_bf16m_block_bf16(c, pb.data() + at, g.data() + at, len,
                               Bf16Moments{m.data() + at, v.data() + at}, SrKey{77, std::uint64_t(t), at});
      else
        adamw_bf16m_block(c, p.data() + at, g.data() + at, len, Bf16Moments{m.data() + at, v.data() + at});
    }
    add_step(in, t, c, g);
  }
  const nlohmann::json ref = run_reference(in);
  ASSERT_FALSE(ref.is_null()) << "the reference script failed";
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(m[i].bits, ref["m"][i].get<int>()) << "m " << i;
    EXPECT_EQ(v[i].bits, ref["v"][i].get<int>()) << "v " << i;
    EXPECT_EQ(bits(bf16_master ? bf16_to_float(pb[i]) : p[i]), ref["p"][i].get<std::uint32_t>())
        << "parameter " << i;
  }
  EXPECT_EQ(m[kQuantBlock + 3].bits, 0);  // the all-zero stretch kept zero moments
  EXPECT_NE(m[3].bits, 0);
}

INSTANTIATE_TEST_SUITE_P(Masters, Bf16MomentAdamReference, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Bf16StochasticMaster" : "Fp32Master"; });

// An embedding's sparse gradients: a 64-row x 48-wide table (12 blocks, rows cut by blocks) of which 3
// rows, drawn each step, get a gradient for 30 steps, as a batch's tokens do. Every code, absmax and
// parameter as the reference's (one ulp for an fp32 master, exact for bf16-sr); rows never drawn keep
// moments of the zero code and move only by the weight decay.
TEST_P(Int8AdamReference, AnEmbeddingsSparseGradientsGiveTheReferencesStates) {
  const bool bf16_master = GetParam();
  std::string why;
  if (!reference_available(&why)) GTEST_SKIP() << why;
  const std::size_t rows = 64, width = 48, n = rows * width;
  std::mt19937 rng(99);
  const std::vector<float> p0 = start(rng, n, bf16_master);
  States s(p0);
  nlohmann::json in = reference_input(p0, bf16_master, "int8");
  std::vector<bool> touched(rows, false);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  for (int t = 1; t <= 30; ++t) {
    std::vector<float> g(n, 0.0f);
    for (int k = 0; k < 3; ++k) {
      const std::size_t r = rng() % rows;
      touched[r] = true;
      for (std::size_t j = 0; j < width; ++j) g[r * width + j] += nd(rng);
    }
    const math::AdamCoeffs c = coeffs(t);
    s.step(c, g, bf16_master, 77, t);
    add_step(in, t, c, g);
  }
  const nlohmann::json ref = run_reference(in);
  ASSERT_FALSE(ref.is_null()) << "the reference script failed";
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(s.m[i], ref["m"][i].get<int>()) << "m code " << i;
    EXPECT_EQ(s.v[i], ref["v"][i].get<int>()) << "v code " << i;
    const std::uint32_t want = ref["p"][i].get<std::uint32_t>(), got = bits(s.param(i, bf16_master));
    EXPECT_LE(std::llabs(std::int64_t(got) - std::int64_t(want)), bf16_master ? 0 : 1) << "parameter " << i;
  }
  for (std::size_t b = 0; b < quant_blocks(n); ++b) {
    EXPECT_EQ(bits(s.m_abs[b]), ref["m_absmax"][b].get<std::uint32_t>()) << "m absmax of block " << b;
    EXPECT_EQ(bits(s.v_abs[b]), ref["v_absmax"][b].get<std::uint32_t>()) << "v absmax of block " << b;
  }
  int untouched = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    if (touched[r]) continue;
    ++untouched;
    for (std::size_t j = 0; j < width; ++j) {
      const std::size_t i = r * width + j;
      EXPECT_EQ(s.m[i], nearest_code(dynamic_map(true), 0.0f)) << "row " << r;
      EXPECT_EQ(s.v[i], nearest_code(dynamic_map(false), 0.0f)) << "row " << r;
      EXPECT_LE(std::fabs(s.param(i, bf16_master)), std::fabs(p0[i]) * 1.0001f)
          << "row " << r << ": only decayed";
    }
  }
  EXPECT_GT(untouched, 10) << "the draw left rows without a gradient";
}

TEST(Int8Adam, ANonFiniteGradientLeavesItsParameterAsItWas) {
  std::vector<float> p0(300, 0.5f);
  States s(p0);
  std::vector<float> g(300, 0.1f);
  g[3] = kNaN, g[4] = kInf, g[290] = -kInf;
  s.step(coeffs(1), g, false, 0, 1);
  EXPECT_EQ(s.p[3], 0.5f);
  EXPECT_EQ(s.p[4], 0.5f);
  EXPECT_EQ(s.p[290], 0.5f);
  EXPECT_NE(s.p[5], 0.5f);
  EXPECT_EQ(dynamic_map(true)[s.m[3]], 0.0f);  // its moments stayed 0
  EXPECT_EQ(dynamic_map(false)[s.v[4]], 0.0f);
}

// A parameter whose gradient was 1e-4 of its block's largest once and zero for 1,000 steps after: its
// second moment is far below the block's (1e-8 of it), and had it rounded to 0 while the first moment
// did not, each step would move it by step_size * m / eps. Every step moves it by at most 3 lr.
TEST(Int8Adam, AParameterWhoseGradientTurnsZeroDoesNotDrift) {
  const std::size_t n = 256;
  std::vector<float> p0(n, 0.0f);
  States s(p0);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const float lr = 1e-3f;
  float worst = 0.0f;
  for (int t = 1; t <= 1000; ++t) {
    std::vector<float> g(n);
    for (std::size_t i = 1; i < n; ++i) g[i] = nd(rng);
    g[0] = t == 1 ? 1e-4f : 0.0f;
    const float before = s.p[0];
    s.step(coeffs(t, lr, 0.0f), g, false, 0, t);
    worst = std::max(worst, std::fabs(s.p[0] - before));
  }
  EXPECT_LE(worst, 3 * lr);
  EXPECT_TRUE(std::isfinite(s.p[0]));
}

TEST(Int8Adam, AnAllZeroBlockStaysAllZero) {
  std::vector<float> p0(256, 1.0f);
  States s(p0);
  for (int t = 1; t <= 3; ++t) s.step(coeffs(t, 1e-3f, 0.0f), std::vector<float>(256, 0.0f), false, 0, t);
  EXPECT_EQ(s.m_abs[0], 0.0f);
  EXPECT_EQ(s.v_abs[0], 0.0f);
  for (float x : s.p) EXPECT_EQ(x, 1.0f);
}

TEST(StochasticRounding, TheMeanOfManyRoundingsIsTheValue) {
  // 1 + 0.3 ulp(bf16) lies between two bf16 values 2^-7 apart; 100,000 draws round up 30% of the time
  // (the standard error of the share is 0.0015: 0.3 within 0.005).
  const float x = 1.0f + 0.3f * 0.0078125f;
  int up = 0;
  for (std::uint64_t e = 0; e < 100000; ++e)
    up += bf16_to_float(float_to_bf16_sr(x, counter_bits(9, 1, e))) > 1.0f;
  EXPECT_NEAR(up / 100000.0, 0.3, 0.005);
  // Negative values alike, in magnitude; exact bf16 values never move; NaN and inf stay.
  int away = 0;
  for (std::uint64_t e = 0; e < 100000; ++e)
    away += bf16_to_float(float_to_bf16_sr(-x, counter_bits(9, 2, e))) < -1.0f;
  EXPECT_NEAR(away / 100000.0, 0.3, 0.005);
  for (std::uint32_t r : {0u, 0xffffu, 0x12345678u}) {
    EXPECT_EQ(bf16_to_float(float_to_bf16_sr(1.5f, r)), 1.5f);
    EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16_sr(kNaN, r))));
    EXPECT_EQ(bf16_to_float(float_to_bf16_sr(kInf, r)), kInf);
    EXPECT_TRUE(std::isfinite(bf16_to_float(float_to_bf16_sr(std::numeric_limits<float>::max(), r))));
  }
}

TEST(StochasticRounding, TheBitsDependOnSeedStepAndElementAndNothingElse) {
  EXPECT_EQ(counter_bits(1, 2, 3), counter_bits(1, 2, 3));
  EXPECT_NE(counter_bits(1, 2, 3), counter_bits(2, 2, 3));
  EXPECT_NE(counter_bits(1, 2, 3), counter_bits(1, 3, 3));
  EXPECT_NE(counter_bits(1, 2, 3), counter_bits(1, 2, 4));
  // Pinned: a change of the generator changes every run's bf16 master, and must be seen.
  EXPECT_EQ(counter_bits(0, 0, 0), 0x06d355afu);  // from adam_int8_reference.py's counter_bits
  EXPECT_EQ(counter_bits(77, 5, 845), 0x2d587838u);
}

}  // namespace
}  // namespace tz
