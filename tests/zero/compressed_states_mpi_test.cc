// Training with compressed optimizer states on the host tier (issue 36): tiny GPT-2 with int8 moments and a
// bf16-sr master gives the same losses bit for bit at ZeRO stages 1, 2 and 3 (other losses than fp32's);
// and a run resumed from its checkpoint is bitwise the run that never stopped (a resume in other formats
// converts: tests/train/state_conversion_mpi_test.cc).
#include <gtest/gtest.h>

#include "comm/communicator.h"
#include "tests/common/error_message.h"
#include "tests/common/test_dir.h"
#include "tests/common/tier_runs.h"
#include "train/collective_util.h"
#include "train/trainer.h"

namespace tz {
namespace {

using testing::quiet;

TrainOptions compressed(int stage, int steps) {
  TrainOptions o = testing::offloaded(testing::tiny_tier_run(stage, steps), Tier::host);
  o.offload.optimizer_states = MomentFormat::int8;
  o.offload.master_weights = MasterFormat::bf16_sr;
  return o;
}

TEST(CompressedStatesTraining, Int8AndBf16SrGiveTheSameLossesAtStages1To3) {
  auto comm = make_mpi_world();
  const TrainResult one = train(compressed(1, 6), *comm, quiet);
  ASSERT_EQ(one.losses.size(), 6u);
  for (int stage : {2, 3}) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    const TrainResult r = train(compressed(stage, 6), *comm, quiet);
    EXPECT_EQ(r.losses, one.losses);  // bitwise
    EXPECT_EQ(r.val_loss, one.val_loss);
  }
  TrainOptions fp32 = compressed(1, 6);
  fp32.offload.optimizer_states = MomentFormat::fp32;
  fp32.offload.master_weights = MasterFormat::fp32;
  const TrainResult f = train(fp32, *comm, quiet);
  EXPECT_EQ(f.losses[0], one.losses[0]);  // the same first forward
  EXPECT_NE(f.losses, one.losses);        // then the states' formats show
  EXPECT_LT(one.host_persistent_bytes, f.host_persistent_bytes);
}

TEST(CompressedStatesTraining, AResumedRunIsBitwiseTheRunThatNeverStopped) {
  auto comm = make_mpi_world();
  testing::TestDir mine;
  const std::string dir = all_gather_strings(*comm, mine.file("ckpt"))[0];
  for (int stage : {1, 3}) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    const TrainResult straight = train(compressed(stage, 8), *comm, quiet);
    TrainOptions first = compressed(stage, 4);
    first.save_dir = dir + std::to_string(stage);
    first.save_every = 4;
    train(first, *comm, quiet);
    TrainOptions second = compressed(stage, 8);
    second.save_dir = first.save_dir;
    second.resume = "latest";
    const TrainResult resumed = train(second, *comm, quiet);
    ASSERT_EQ(resumed.losses.size(), 4u);
    for (std::size_t k = 0; k < 4; ++k) EXPECT_EQ(resumed.losses[k], straight.losses[4 + k]) << "step " << 5 + k;
    EXPECT_EQ(resumed.val_loss, straight.val_loss);
  }
}

}  // namespace
}  // namespace tz
