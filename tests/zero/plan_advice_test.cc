// Tests zero/plan_advice.h: every change suggested for a plan that does not fit is re-planned and fits,
// the least invasive value of a size is the one shown, and the cheapest kinds of change come first.
#include "zero/plan_advice.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace tz {
namespace {

// Planned for a cuda device: its plan has no matmul workspace, whose size on the cpu device depends on
// the CPU (every bf16 product is widened to fp32 on CPUs without AVX-512), so the figures below hold on
// every machine.
PlanInputs gpt2_medium_offload(int stage, int world, std::size_t device_mem) {
  PlanInputs in;
  in.device = DeviceKind::cuda;
  in.model = model_preset("gpt2-medium");
  in.shape = ModelShape{4, 64};
  in.dtype = DType::bf16;
  in.zero.stage = stage;
  in.offload.optimizer = Tier::host;
  in.world = world;
  in.budget[Tier::device] = device_mem;
  return in;
}

TEST(PlanAdvice, CountsAreWrittenAsDeepSpeedWritesThem) {
  EXPECT_EQ(count_text(50'000'000), "5e7");
  EXPECT_EQ(count_text(200'000'000), "2e8");
  EXPECT_EQ(count_text(123), "123");
  EXPECT_EQ(count_text(1'234'567), "1234567");
  EXPECT_EQ(count_text(25'000'000), "25e6");
}

// gpt2-medium, bf16, stage 2 with the optimizer on the host, 2 ranks, 1.5 GiB of device memory besides
// NCCL's buffers (a line of the plan, kNcclBufferBytes): the
// default 5e8-element bucket (1.32 GiB) does not fit, and no single change is enough; every suggested
// pair fits when planned again here, and the bucket suggested is the largest of the sizes tried.
TEST(PlanAdvice, EverySuggestionForGpt2MediumIn1p5GiBFitsWhenReplanned) {
  const std::size_t budget = (std::size_t(3) << 29) + kNcclBufferBytes;  // 1.5 GiB + NCCL's
  const PlanInputs in = gpt2_medium_offload(2, 2, budget);
  ASSERT_NE(plan_memory(in).fit_problem(), "");
  const std::vector<PlanChange> advice = advise(in);
  ASSERT_FALSE(advice.empty());
  for (const PlanChange& c : advice) {
    SCOPED_TRACE(c.flags);
    EXPECT_LE(c.total[Tier::device], budget);
    EXPECT_NE(c.flags.find(" and "), std::string::npos) << "no single change fits this plan";
  }
  EXPECT_EQ(advice.front().flags.rfind("--reduce-bucket-size 5e7 and ", 0), 0u) << advice.front().flags;
  // Re-plan the first suggestion independently: bucket 5e7 and micro-batch 1.
  PlanInputs x = in;
  x.zero.reduce_bucket_size = 50'000'000;
  x.shape.B = 1;
  EXPECT_EQ(plan_memory(x).fit_problem(), "");
  x.zero.reduce_bucket_size = 100'000'000;  // the next larger size tried does not fit
  EXPECT_NE(plan_memory(x).fit_problem(), "");
}

TEST(PlanAdvice, ASingleChangeIsPreferredAndCheaperKindsComeFirst) {
  // Stage 0, one rank, with room for everything but the gradient bucket at its default size.
  PlanInputs in;
  in.model = model_preset("gpt2");
  in.shape = ModelShape{4, 64};
  in.world = 2;
  const MemoryPlan full = plan_memory(in);
  in.budget[Tier::device] = full.total(Tier::device) - (std::size_t(64) << 20);
  const std::vector<PlanChange> advice = advise(in);
  ASSERT_GE(advice.size(), 2u);
  EXPECT_EQ(advice.front().cost, 0) << advice.front().flags;  // a size change costs no time
  for (std::size_t i = 1; i < advice.size(); ++i) EXPECT_LE(advice[i - 1].cost, advice[i].cost);
  for (const PlanChange& c : advice) EXPECT_EQ(c.flags.find(" and "), std::string::npos) << c.flags;
}

TEST(PlanAdvice, TrainsRefusalCarriesTheAdvice) {
  const MemoryPlan p = plan_memory(gpt2_medium_offload(2, 2, (std::size_t(3) << 29) + kNcclBufferBytes));
  try {
    check_fits_with_advice(p);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("out of device memory budget"), std::string::npos) << m;
    EXPECT_NE(m.find("smallest changes that fit (each re-planned"), std::string::npos) << m;
    EXPECT_NE(m.find("--reduce-bucket-size 5e7"), std::string::npos) << m;
  }
}

// A micro-batch of 1 and buckets already at the smallest size tried leave nothing smaller: those kinds
// of change are not offered (and nothing divides by a micro-batch of 0).
// A cuda run whose host tier holds the offloaded states but not the speculative CPU Adam's arena: the
// advice turns the overlap off (or covers less), which costs step time and no memory elsewhere.
TEST(PlanAdvice, AHostTierShortByTheSpeculativeArenaIsToldToTurnTheOverlapOff) {
  PlanInputs in = gpt2_medium_offload(2, 2, kUnlimited);
  in.offload.overlap_optimizer = OptimizerOverlap::off;
  const std::size_t without = plan_memory(in).total(Tier::host);
  in.offload.overlap_optimizer = OptimizerOverlap::automatic;  // on: a cuda device
  ASSERT_GT(plan_memory(in).total(Tier::host), without);
  in.budget[Tier::host] = without;
  const std::vector<PlanChange> advice = advise(in);
  ASSERT_FALSE(advice.empty());
  EXPECT_EQ(advice.front().flags, "--overlap-optimizer off");
}

TEST(PlanAdvice, SizesWithNothingSmallerToTryAreNotOffered) {
  PlanInputs in = gpt2_medium_offload(2, 2, std::size_t(3) << 29);
  in.shape.B = 1;
  in.zero.reduce_bucket_size = 1'000'000;
  for (const PlanChange& c : advise(in)) {
    EXPECT_EQ(c.flags.find("--micro-batch"), std::string::npos) << c.flags;
    EXPECT_EQ(c.flags.find("--reduce-bucket-size"), std::string::npos) << c.flags;
  }
}

TEST(PlanAdvice, NothingToTryNamesTheBudgetToRaise) {
  PlanInputs in = gpt2_medium_offload(3, 1, std::size_t(1) << 20);  // 1 MiB: nothing fits
  const std::string text = advice_text(plan_memory(in));
  EXPECT_NE(text.find("raise the budget of the tier named above"), std::string::npos) << text;
}

}  // namespace
}  // namespace tz
