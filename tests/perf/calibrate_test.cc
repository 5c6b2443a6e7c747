// Tests the pieces of `tierzero bench calibrate` that need no second rank: the spread of a noisy term's
// rounds (perf/calibrate_comm.h) and the libraries line, what training steps hold beyond the plan's
// buffers (perf/calibrate_memory.h, from bench step's training path); the matmul-rate curves
// (perf/calibrate_matmul.h): the widths they scale and the points they measure.
#include <gtest/gtest.h>

#include "tests/common/error_message.h"

#include "core/poison.h"
#include "core/resident_memory.h"
#include "model/model_config.h"
#include "model/model_family.h"
#include "perf/calibrate_comm.h"
#include "perf/calibrate_matmul.h"
#include "perf/calibrate_memory.h"
#include "perf/step_bench.h"

namespace tz {
namespace {

TEST(RoundSpread, TheMeanLeavesOutTheLeastAndTheLargestRound) {
  const RoundSpread s = round_spread({5, 1, 9, 3, 7});
  EXPECT_DOUBLE_EQ(s.mean, 5.0);  // (3 + 5 + 7) / 3
  EXPECT_DOUBLE_EQ(s.q1, 3.0);    // sorted 1 3 5 7 9: the 2nd and the 4th
  EXPECT_DOUBLE_EQ(s.q3, 7.0);
}

TEST(RoundSpread, BimodalRoundsGiveTheirAverageNotTheCommonMode) {
  // 10 rounds of 0.5 ms and 5 that lost a 4.5 ms scheduler tick: the median would say 0.5 ms.
  std::vector<double> v(10, 0.5e-3);
  v.insert(v.end(), 5, 5e-3);
  const RoundSpread s = round_spread(v);
  EXPECT_NEAR(s.mean, (9 * 0.5e-3 + 4 * 5e-3) / 13, 1e-15);
  EXPECT_DOUBLE_EQ(s.q1, 0.5e-3);  // sorted index lround(3.5) = 4
  EXPECT_DOUBLE_EQ(s.q3, 5e-3);    // sorted index lround(10.5) = 11
}

TEST(RoundSpread, TwoRoundsOrNoneGiveTheMedianOrZero) {
  const RoundSpread two = round_spread({1, 3});
  EXPECT_DOUBLE_EQ(two.mean, 2.0);
  EXPECT_DOUBLE_EQ(two.q1, 1.0);  // index lround(0.25) = 0
  EXPECT_DOUBLE_EQ(two.q3, 3.0);  // index lround(0.75) = 1
  const RoundSpread none = round_spread({});
  EXPECT_EQ(none.mean, 0.0);
  EXPECT_EQ(none.q1, 0.0);
  EXPECT_EQ(none.q3, 0.0);
}

TEST(Libraries, TrainingStepsHoldSomethingBeyondThePlansBuffersAndNotAsMuchAsThem) {
  if (kPoisonDeviceMemory) GTEST_SKIP() << "under AddressSanitizer the resident set holds its shadow and quarantine";
  if (!reset_resident_peak()) GTEST_SKIP() << "this kernel refuses to reset the peak resident set (clear_refs)";
  CalibrateOptions opt;
  opt.model = model_preset("tiny");
  opt.model_name = "tiny";
  opt.micro_batch = 2;
  opt.seq_len = 32;
  int products = 0;
  const double bytes = measure_libraries(opt, &products);
  // oneDNN's JIT kernels alone are tens of KiB per product; the plan of this model is several MiB, and
  // what runs beside it is not larger than the C library's and oneDNN's few MiB.
  EXPECT_GT(bytes, 64.0 * 1024);
  EXPECT_LT(bytes, 64.0 * 1024 * 1024);
  // The products are the model's distinct fp32 matrix products, which the plan scales the line by.
  EXPECT_EQ(products, int(model_family(opt.model)
                              .gemm_shapes(opt.model, ModelShape{opt.micro_batch, opt.seq_len}, DType::f32)
                              .size()));
}

TEST(MatmulRates, AScaledWidthScalesTheWidthsThatFollowItAndKeepsTheHeads) {
  ModelConfig gpt = model_preset("tiny");
  gpt.n_layer = 6, gpt.n_head = 6, gpt.n_embd = 384;
  const ModelConfig half = scaled_width(gpt, 0.5);
  EXPECT_EQ(half.n_embd, 192);
  EXPECT_EQ(half.n_head, 6);
  EXPECT_EQ(scaled_width(gpt, 2).n_embd, 768);
  ModelConfig llama = gpt;
  llama.family = "llama", llama.n_kv_head = 2, llama.head_dim = 64, llama.ffn_dim = 1024;
  const ModelConfig wide = scaled_width(llama, 2);
  EXPECT_EQ(wide.n_embd, 768);
  EXPECT_EQ(wide.ffn_dim, 2048);
  EXPECT_EQ(wide.head_dim, 128);
  EXPECT_EQ(wide.n_kv_head, 2);
  // 384 / 3 = 128 is not a whole number of 6 heads' widths: refused as the model would be.
  const std::string m = testing::error_message([&] { scaled_width(gpt, 1.0 / 3); });
  EXPECT_NE(m.find("n_embd"), std::string::npos) << m;
}

// Both curves run through the calibrated model's point (the same figures), with a point below and above
// it, each dtype's rate measured (every product timed).
TEST(MatmulRates, TheCurvesRunThroughTheCalibratedPointWithEveryRateMeasured) {
  CalibrateOptions opt;
  opt.model = model_preset("tiny");
  opt.model_name = "tiny";
  opt.micro_batch = 4;
  opt.seq_len = 32;
  const MatmulRates r = measure_matmul_rates(opt, nullptr);
  const int C = opt.model.n_embd;
  ASSERT_NE(C, 128) << "the width and the tokens must differ, so that a point filed on the wrong curve shows";
  EXPECT_EQ(r.width, C);
  EXPECT_EQ(r.tokens, 128);
  ASSERT_EQ(r.by_width.size(), 3u);
  ASSERT_EQ(r.by_tokens.size(), 3u);
  EXPECT_EQ(r.by_width[0].at, C / 2);
  EXPECT_EQ(r.by_width[2].at, 2 * C);
  EXPECT_EQ(r.by_tokens[0].at, 64);
  EXPECT_EQ(r.by_tokens[1].at, 128);
  EXPECT_EQ(r.by_tokens[2].at, 256);
  EXPECT_EQ(r.by_width[1], (RatePoint{C, {r.by_tokens[1].tflops[0], r.by_tokens[1].tflops[1], r.by_tokens[1].tflops[2]}}));
  // A file with these curves loads (ascending, each through its calibrated point).
  Hardware h;
  h.matmul = r;
  EXPECT_EQ(Hardware::from_json(h.to_json(), "hw.json").matmul, r);
  EXPECT_DOUBLE_EQ(r.factor(DType::f32, C, 128), 1.0);
  for (const auto* curve : {&r.by_width, &r.by_tokens})
    for (const RatePoint& p : *curve)
      for (double t : p.tflops) {
        EXPECT_GT(t, 1e-6) << "at " << p.at;
        EXPECT_LT(t, 1e3) << "at " << p.at;
      }
  EXPECT_TRUE(r.measured());
}

}  // namespace
}  // namespace tz
