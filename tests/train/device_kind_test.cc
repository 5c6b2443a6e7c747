// A device kind is data: a third kind registered by the test (tests/common/wide_cpu_device.h: a cpu
// device with other attention and workspace sizes) is planned with its own sizes, allocates them, and
// trains bitwise like the cpu.
#include <gtest/gtest.h>

#include "model/model_config.h"
#include "tests/common/one_rank_run.h"
#include "tests/common/wide_cpu_device.h"
#include "train/trainer.h"
#include "zero/memory_plan.h"

namespace tz {
namespace {

TEST(DeviceKindAsData, ARegisteredThirdKindIsPlannedWithItsOwnSizesAndTrainsBitwiseLikeTheCpu) {
  const DeviceKind wide = testing::wide_cpu_kind();
  TrainOptions cpu = testing::tiny_run(5, "");
  TrainOptions other = cpu;
  other.device = wide;
  // The tiny preset at batch 4 x 64: two blocks, each keeping [4, 4, 64, 64] probabilities; the wide kind
  // keeps twice that, and a 256-float workspace fp32 products on the cpu do not ask for.
  const std::size_t probabilities = std::size_t(cpu.micro_batch) * cpu.model.n_head * cpu.seq_len * cpu.seq_len * 4;
  const std::size_t extra = std::size_t(cpu.model.n_layer) * probabilities + testing::kWideExtraWorkspaceFloats * 4;

  const MemoryPlan pc = plan_memory(plan_inputs(cpu, 1, 0)), pw = plan_memory(plan_inputs(other, 1, 0));
  EXPECT_EQ(pw.total(Tier::device) - pc.total(Tier::device), extra);
  EXPECT_EQ(pw.total(Tier::host), pc.total(Tier::host));

  const TrainResult a = testing::run_one_rank(cpu);
  const TrainResult b = testing::run_one_rank(other);
  ASSERT_EQ(a.losses.size(), 5u);
  EXPECT_EQ(a.losses, b.losses);  // bitwise
  EXPECT_EQ(a.val_loss, b.val_loss);
  EXPECT_EQ(b.plan_bytes[Tier::device] - a.plan_bytes[Tier::device], extra);
  // What the device's allocator saw, not the plan's bookkeeping: the wide kind's buffers were allocated.
  EXPECT_EQ(b.peak_bytes[Tier::device] - a.peak_bytes[Tier::device], extra);
}

}  // namespace
}  // namespace tz
