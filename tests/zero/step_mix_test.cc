// Tests zero/step_mix.h: a model's work split into products, attention and the rest, and the compute
// term timing another shape kind by kind from a calibrated model's split, with exact arithmetic; the
// hardware file's "step_mix" round-trips and bad ones are refused by name.
#include "zero/step_mix.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/common/error_message.h"
#include "zero/step_time.h"

namespace tz {
namespace {

ModelConfig gpt(int layers, int width, int heads) {
  ModelConfig c = model_preset("tiny");
  c.n_layer = layers, c.n_embd = width, c.n_head = heads;
  return c;
}

// A CPU node of 2 cores calibrated on `cal` at B x T: one rank of 2 threads computes at 1 TFLOP/s.
Hardware cpu_node(const ModelConfig& cal, int B, int T, double matmul, double attention, double other) {
  Hardware h;
  h.name = "mixed";
  h.device = DeviceKind::cpu;
  h.ranks_per_node = 1;
  h.step_tflops[0] = h.peak_tflops[0] = 1;
  h.device_gbs = h.cpu_adam_gbs = h.link_gbs = 10;
  h.mix.calibrated = compute_counts(cal, B, T);
  h.mix.share[0][0] = matmul, h.mix.share[0][1] = attention, h.mix.share[0][2] = other;
  return h;
}

double compute_s(const ModelConfig& m, int B, int T, const Hardware& h) {
  PlanInputs in;
  in.model = m;
  in.shape = ModelShape{B, T};
  in.device = DeviceKind::cpu;
  in.world = 1;
  for (const StepTerm& t : predict_step(plan_memory(in), h, 1).terms)
    if (t.what == "compute") return t.seconds;
  throw std::runtime_error("no compute term");
}

TEST(StepMix, TheCountsSplitTheModelFlopsIntoProductsAndAttention) {
  const ModelConfig c = gpt(3, 96, 4);
  const int B = 2, T = 16;
  const ComputeCounts k = compute_counts(c, B, T);
  EXPECT_DOUBLE_EQ(k.model_flops, model_flops(c, B, T));
  EXPECT_DOUBLE_EQ(k.model_flops - k.matmul_flops, double(B) * T * 12 * 3 * 96 * T)
      << "GPT-2's 12 L C T per token";
  EXPECT_DOUBLE_EQ(k.attention_scores, 3.0 * B * 4 * T * (T + 1) / 2);
  EXPECT_DOUBLE_EQ(k.other_elements, 3.0 * B * T * (96 + 4 * 96)) << "GPT-2's MLP is 4 x the width";
  // Heads change the scores, not the FLOPs.
  const ComputeCounts more = compute_counts(gpt(3, 96, 8), B, T);
  EXPECT_DOUBLE_EQ(more.model_flops, k.model_flops);
  EXPECT_DOUBLE_EQ(more.attention_scores, 2 * k.attention_scores);
}

TEST(StepMix, TheCalibratedModelIsTimedAtItsOwnRateAndOthersKindByKind) {
  const ModelConfig cal = gpt(4, 128, 4);
  const Hardware h = cpu_node(cal, 4, 32, 0.5, 0.25, 0.25);
  const double f = model_flops(cal, 4, 32);
  EXPECT_NEAR(compute_s(cal, 4, 32, h), f / 1e12, 1e-12 * f / 1e12) << "its own shares sum to 1";
  // Twice the heads: the same FLOPs, twice the scores: a quarter more time.
  EXPECT_NEAR(compute_s(gpt(4, 128, 8), 4, 32, h), 1.25 * f / 1e12, 1e-12 * f / 1e12);
  // Twice the micro-batch: every kind's work doubles.
  EXPECT_NEAR(compute_s(cal, 8, 32, h), 2 * f / 1e12, 1e-12 * f / 1e12);
  // Another width and depth: each kind scaled by its own work.
  const ModelConfig other = gpt(6, 64, 2);
  const ComputeCounts a = compute_counts(cal, 4, 32), b = compute_counts(other, 4, 32);
  const double want =
      f / 1e12 *
      (0.5 * b.matmul_flops / a.matmul_flops + 0.25 * b.attention_scores / a.attention_scores +
       0.25 * b.other_elements / a.other_elements);
  EXPECT_NEAR(compute_s(other, 4, 32, h), want, 1e-12 * want);
  // No mix for the dtype (or none at all): every model FLOP at the rate, as before.
  Hardware none = h;
  none.mix = StepMix{};
  EXPECT_NEAR(compute_s(gpt(4, 128, 8), 4, 32, none), f / 1e12, 1e-12 * f / 1e12);
}

TEST(StepMix, HardwareFilesCarryTheMixAndRefuseBadOnes) {
  const Hardware h = cpu_node(gpt(4, 128, 4), 4, 32, 0.7, 0.2, 0.1);
  const Hardware back = Hardware::from_json(h.to_json(), "x");
  EXPECT_TRUE(back.mix == h.mix);
  EXPECT_TRUE(back.mix.measured(DType::f32));
  EXPECT_FALSE(back.mix.measured(DType::bf16));
  nlohmann::json old = h.to_json();
  old.erase("step_mix");
  EXPECT_FALSE(Hardware::from_json(old, "x").mix.measured(DType::f32)) << "files from before it load";
  nlohmann::json j = h.to_json();
  j["step_mix"]["fp32"]["other"] = 0.3;
  EXPECT_NE(testing::error_message([&] {
              Hardware::from_json(j, "f.json");
            }).find("'step_mix.fp32': the fractions of the step sum to 1.2"),
            std::string::npos);
  j = h.to_json();
  j["step_mix"]["fp32"]["attention"] = -0.1;
  EXPECT_NE(testing::error_message([&] {
              Hardware::from_json(j, "f.json");
            }).find("'step_mix.fp32.attention' must be a fraction"),
            std::string::npos);
  j = h.to_json();
  j["step_mix"]["attention_scores"] = 0;
  EXPECT_NE(testing::error_message([&] {
              Hardware::from_json(j, "f.json");
            }).find("f.json: hardware field 'step_mix.attention_scores' must be a positive"),
            std::string::npos);
  j = h.to_json();
  j["step_mix"] = "fast";
  EXPECT_NE(
      testing::error_message([&] { Hardware::from_json(j, "f.json"); }).find("'step_mix' must be an object"),
      std::string::npos);
}

}  // namespace
}  // namespace tz
