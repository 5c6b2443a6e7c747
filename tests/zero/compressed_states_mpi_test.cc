// Training with compressed optimizer states (issue 36): tiny GPT-2 with int8 moments and a bf16-sr master
// gives the same losses bit for bit at ZeRO stages 1, 2 and 3 (other losses than fp32's), and on NVMe and
// on the device the host tier's losses, the store holding the compressed bytes; a run resumed from its
// checkpoint is bitwise the run that never stopped, also moving from NVMe or the device to the host tier and
// back (a resume in other formats converts: tests/train/state_conversion_mpi_test.cc).
#include <gtest/gtest.h>

#include "comm/communicator.h"
#include "tests/common/error_message.h"
#include "tests/common/test_dir.h"
#include "tests/common/tier_runs.h"
#include "train/collective_util.h"
#include "train/trainer.h"
#include "zero/memory_plan.h"

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

// The states on NVMe in records of at most 2,048 elements (tiny's larger tensors cut on blocks), in `dir`.
TrainOptions on_nvme(TrainOptions o, const std::string& dir) {
  o = testing::offloaded(o, Tier::nvme);
  o.offload.nvme_paths = {dir};
  o.offload.aio_block_size = 4096;
  o.offload.sub_group_size = 2048;
  o.offload.buffer_count = 3;
  return o;
}

TEST(CompressedStatesTraining, OnNvmeTheLossesAreTheHostTiers) {
  auto comm = make_mpi_world();
  testing::TestDir dir;
  for (int stage : {1, 3}) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    const TrainResult host = train(compressed(stage, 6), *comm, quiet);
    const TrainResult nvme = train(on_nvme(compressed(stage, 6), dir.path()), *comm, quiet);
    ASSERT_EQ(nvme.losses.size(), 6u);
    EXPECT_EQ(nvme.losses, host.losses);  // bitwise
    EXPECT_EQ(nvme.val_loss, host.val_loss);
    EXPECT_EQ(nvme.peak_bytes[Tier::nvme], nvme.plan_bytes[Tier::nvme]);
    // The store holds the layouts' bytes, each record rounded up to a 4 KiB block (tiny's small tensors keep
    // fp32 moments, so its ratio to fp32 is above GPT-2's: tests/zero/packed_swap_test.cc).
    const MemoryPlan plan =
        plan_memory(plan_inputs(on_nvme(compressed(stage, 1), dir.path()), comm->size(), comm->rank()));
    std::size_t layouts = 0;
    for (const CompressedLayout& l : plan.compressed)
      layouts += l.master_bytes() + 2 * l.moment_array_bytes();
    EXPECT_GE(plan.optimizer_swap.bytes, layouts);
    EXPECT_LE(plan.optimizer_swap.bytes, layouts + plan.optimizer_swap.packed.size() * (4096 + 2 * 64));
  }
}

// The states on the device (no offload): the backend's adamw_compressed, on the cpu device the CPU Adam.
TrainOptions on_device(TrainOptions o) {
  o.offload.optimizer = o.offload.param = Tier::device;
  return o;
}

TEST(CompressedStatesTraining, OnTheDeviceTheLossesAreTheHostTiers) {
  auto comm = make_mpi_world();
  for (int stage : {0, 1, 2, 3}) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    const TrainResult host = train(compressed(std::max(stage, 1), 6), *comm, quiet);
    const TrainResult device = train(on_device(compressed(stage, 6)), *comm, quiet);
    ASSERT_EQ(device.losses.size(), 6u);
    EXPECT_EQ(device.losses, host.losses);  // bitwise, stage 0 too (the host tier's stage 1 stands for it)
    EXPECT_EQ(device.val_loss, host.val_loss);
    EXPECT_LT(device.persistent_bytes, train(on_device(testing::tiny_tier_run(stage, 1)), *comm, quiet).persistent_bytes);
  }
}

TEST(CompressedStatesTraining, AResumeMovesTheStatesBetweenTiersBitwise) {
  auto comm = make_mpi_world();
  testing::TestDir mine, store;
  const std::string dir = all_gather_strings(*comm, mine.file("ckpt"))[0];
  struct Move {
    int stage;
    Tier from, to;
  };
  for (const Move& mv : {Move{1, Tier::nvme, Tier::host}, Move{3, Tier::host, Tier::nvme},
                         Move{2, Tier::device, Tier::host}, Move{3, Tier::host, Tier::device}}) {
    SCOPED_TRACE("stage " + std::to_string(mv.stage) + ", " + tier_name(mv.from) + " to " + tier_name(mv.to));
    const TrainResult straight = train(compressed(mv.stage, 8), *comm, quiet);
    auto place = [&](TrainOptions o, Tier t) {
      return t == Tier::nvme ? on_nvme(o, store.path()) : t == Tier::device ? on_device(o) : o;
    };
    TrainOptions first = place(compressed(mv.stage, 4), mv.from), second = place(compressed(mv.stage, 8), mv.to);
    first.save_dir = second.save_dir = dir + tier_name(mv.from) + tier_name(mv.to) + std::to_string(mv.stage);
    first.save_every = 4;
    train(first, *comm, quiet);
    second.resume = "latest";
    const TrainResult resumed = train(second, *comm, quiet);
    ASSERT_EQ(resumed.losses.size(), 4u);
    for (std::size_t k = 0; k < 4; ++k) EXPECT_EQ(resumed.losses[k], straight.losses[4 + k]) << "step " << 5 + k;
    EXPECT_EQ(resumed.val_loss, straight.val_loss);
  }
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
