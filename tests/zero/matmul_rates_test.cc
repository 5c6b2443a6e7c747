// Tests zero/matmul_rates.h: the factor on the calibrated step rate, interpolated in log2 of the width and
// of the tokens and held beyond the measured ends, with exact arithmetic on hand-made curves; the hardware
// file's section round-trips and malformed ones are refused naming the field; predict_step applies it.
#include "zero/matmul_rates.h"

#include <gtest/gtest.h>

#include "tests/common/error_message.h"
#include "zero/hardware.h"
#include "zero/step_time.h"

namespace tz {
namespace {

// Width 384 (the calibrated one) at rate 4; 192 at 2, 768 at 8 (fp32); bf16 twice those; fp16 not measured.
// Tokens 512 at 4; 256 at 3; 1024 at 4.
MatmulRates curves() {
  MatmulRates r;
  r.width = 384, r.tokens = 512;
  r.by_width = {{192, {2, 4, 0}}, {384, {4, 8, 0}}, {768, {8, 16, 0}}};
  r.by_tokens = {{256, {3, 6, 0}}, {512, {4, 8, 0}}, {1024, {4, 8, 0}}};
  return r;
}

TEST(MatmulRates, TheCalibratedShapeGetsOneAndOthersTheRatioOfTheirInterpolatedRates) {
  const MatmulRates r = curves();
  EXPECT_DOUBLE_EQ(r.factor(DType::f32, 384, 512), 1.0);
  EXPECT_DOUBLE_EQ(r.factor(DType::f32, 192, 512), 0.5);
  EXPECT_DOUBLE_EQ(r.factor(DType::f32, 768, 512), 2.0);
  // 256 is log2(256/192) / log2(2) = 0.415 of the way from 192 to 384: rate 2 + 0.415 * 2.
  const double t = std::log2(256.0 / 192.0);
  EXPECT_DOUBLE_EQ(r.factor(DType::f32, 256, 512), (2 + 2 * t) / 4);
  EXPECT_DOUBLE_EQ(r.factor(DType::bf16, 256, 512), (4 + 4 * t) / 8);
  // Held at the ends: narrower than 192 is 192's rate, wider than 768 is 768's.
  EXPECT_DOUBLE_EQ(r.factor(DType::f32, 64, 512), 0.5);
  EXPECT_DOUBLE_EQ(r.factor(DType::f32, 4096, 512), 2.0);
  // Tokens multiply in: 384 tokens is halfway (in log2: 0.585) from 256 to 512.
  const double u = std::log2(384.0 / 256.0);
  EXPECT_DOUBLE_EQ(r.factor(DType::f32, 768, 384), 2.0 * (3 + u) / 4);
  EXPECT_DOUBLE_EQ(r.factor(DType::f32, 384, 2048), 1.0);
}

TEST(MatmulRates, WithoutAMeasurementEveryShapeGetsTheCalibratedRate) {
  EXPECT_DOUBLE_EQ(MatmulRates{}.factor(DType::f32, 192, 100), 1.0);
  EXPECT_DOUBLE_EQ(curves().factor(DType::f16, 192, 100), 1.0) << "fp16 is not measured on these curves";
}

TEST(MatmulRates, HardwareFilesCarryTheCurvesAndRefuseBadOnes) {
  Hardware h = hardware_preset("cpu-node");
  EXPECT_TRUE(h.to_json()["matmul_rates"].is_null()) << "a preset has no measurement";
  EXPECT_EQ(Hardware::from_json(h.to_json(), "hw.json").matmul, MatmulRates{});
  h.matmul = curves();
  nlohmann::json j = h.to_json();
  EXPECT_EQ(Hardware::from_json(j, "hw.json").matmul, curves());
  auto refused = [&](nlohmann::json bad, const std::string& says) {
    const std::string m = testing::error_message([&] { Hardware::from_json(bad, "hw.json"); });
    EXPECT_NE(m.find(says), std::string::npos) << m;
  };
  nlohmann::json bad = j;
  bad["matmul_rates"]["by_width"].erase(1);  // the calibrated width
  refused(bad, "'by_width' must include the calibrated width 384");
  bad = j;
  std::swap(bad["matmul_rates"]["by_tokens"][0], bad["matmul_rates"]["by_tokens"][2]);
  refused(bad, "'by_tokens' must be in ascending 'at'");
  bad = j;
  bad["matmul_rates"]["by_width"][0]["fp32"] = -1;
  refused(bad, "hw.json: hardware field 'matmul_rates': 'by_width' entry at 192: 'fp32' must be 0 (not measured) or a rate");
  bad = j;
  bad["matmul_rates"]["by_width"][0]["bf16"] = 1e-9;
  refused(bad, "'bf16' must be 0 (not measured) or a rate in [1e-6, 1e6]");
  bad = j;
  bad["matmul_rates"]["width"] = 0.5;
  refused(bad, "'width' must be a whole number");
  bad = j;
  bad["matmul_rates"].erase("tokens");
  refused(bad, "needs 'width' and 'tokens'");
  bad = j;
  bad["matmul_rates"]["by_tokens"] = nlohmann::json::array();
  refused(bad, "'by_tokens' must be a non-empty list");
  bad = j;
  bad["matmul_rates"] = 3;
  refused(bad, "hardware field 'matmul_rates' must be an object");
}

// The compute term divides the model FLOPs by the calibrated rate times the factor at the plan's width and
// tokens, and says so.
TEST(MatmulRates, TheComputeTermRunsAtTheCalibratedRateTimesTheFactor) {
  Hardware h = hardware_preset("cpu-node");
  PlanInputs in;
  in.model = model_preset("tiny");
  in.shape = ModelShape{4, 64};
  in.world = 1;
  const MemoryPlan plan = plan_memory(in);
  const double flops = model_flops(in.model, 4, 64);
  auto compute = [&](const Hardware& hw) {
    for (const StepTerm& t : predict_step(plan, hw, 1).terms)
      if (t.what == "compute") return t;
    return StepTerm{};
  };
  const StepTerm plain = compute(h);
  h.matmul = curves();
  const StepTerm moved = compute(h);
  const double f = curves().factor(DType::f32, in.model.n_embd, 4 * 64);
  EXPECT_LT(f, 1.0) << "the tiny model is narrower than 384 and has fewer tokens than 512";
  EXPECT_DOUBLE_EQ(moved.seconds, plain.seconds / f);
  EXPECT_DOUBLE_EQ(moved.seconds, flops / (h.step_rate(DType::f32) * f * 1e12));
  char says[96];
  std::snprintf(says, sizeof says, "(x%.2f: products %d wide, 256 tokens; calibrated 384, 512)", f, in.model.n_embd);
  EXPECT_NE(moved.detail.find(says), std::string::npos) << moved.detail;
}

}  // namespace
}  // namespace tz
