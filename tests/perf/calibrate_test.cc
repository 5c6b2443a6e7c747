// Tests the pieces of `tierzero bench calibrate` that need no second rank: the spread of a noisy term's
// rounds (perf/calibrate_comm.h) and the libraries line, what training steps hold beyond the plan's
// buffers (perf/calibrate_memory.h, from bench step's training path).
#include <gtest/gtest.h>

#include "core/poison.h"
#include "core/resident_memory.h"
#include "model/model_config.h"
#include "model/model_family.h"
#include "perf/calibrate_comm.h"
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

}  // namespace
}  // namespace tz
