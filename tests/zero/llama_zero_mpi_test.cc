// ZeRO's contract for the Llama family (llama-tiny: grouped-query attention, an untied head in the
// embedding group), in-process on every rank: stages 0-3 give the same losses, and moving the
// optimizer states and stage 3's parameter shards to the host tier or NVMe changes where bytes live,
// not the arithmetic. The model is the only difference from tests/zero/zero_stages_mpi_test.cc.
#include <gtest/gtest.h>

#include "comm/communicator.h"
#include "tests/common/test_dir.h"
#include "train/trainer.h"

namespace tz {
namespace {

void quiet(const std::string&) {}

TrainOptions llama(int stage, int steps) {
  TrainOptions o;
  o.model = model_preset("llama-tiny");
  o.model_name = "llama-tiny";
  o.steps = steps;
  o.lr.lr = 1e-3f;
  o.log_every = 0;
  o.val_batches = 2;
  o.zero.stage = stage;
  o.zero.reduce_bucket_size = 40'000;
  o.zero.allgather_bucket_size = 40'000;
  o.zero.prefetch_bucket_size = 60'000;
  o.zero.param_persistence_threshold = 0;
  return o;
}

TEST(LlamaZero, AllStagesGiveTheSameLossAtEveryOneOf12Steps) {
  auto comm = make_mpi_world();
  ASSERT_LE(comm->size(), 2) << "sums of two values do not depend on their order: run at 1 or 2 ranks";
  std::vector<TrainResult> r;
  for (int stage = 0; stage <= 3; ++stage) r.push_back(train(llama(stage, 12), *comm, quiet));
  for (int stage = 1; stage <= 3; ++stage) {
    ASSERT_EQ(r[stage].losses, r[0].losses) << "stage " << stage;
    EXPECT_EQ(r[stage].val_loss, r[0].val_loss) << "stage " << stage;
  }
  EXPECT_LT(r[3].losses.back(), r[3].losses.front() - 0.1f);  // and it learns
}

TEST(LlamaZero, CpuAndNvmeOffloadGiveBitwiseTheLossesOfNoOffloadAtStages1To3) {
  auto comm = make_mpi_world();
  testing::TestDir dir;
  for (DType dt : {DType::bf16, DType::f32})
    for (int stage = 1; stage <= 3; ++stage) {
      TrainOptions o = llama(stage, 8);
      o.dtype = dt;
      const TrainResult plain = train(o, *comm, quiet);
      o.offload.optimizer = Tier::host;
      if (stage == 3) o.offload.param = Tier::host;
      const TrainResult cpu = train(o, *comm, quiet);
      ASSERT_EQ(cpu.losses, plain.losses) << "cpu offload, stage " << stage << " " << dtype_name(dt);
      EXPECT_EQ(cpu.val_loss, plain.val_loss);
      o.offload.optimizer = Tier::nvme;
      if (stage == 3) o.offload.param = Tier::nvme;
      o.offload.nvme_paths = {dir.path()};
      o.offload.aio_block_size = 4096;
      o.offload.sub_group_size = 2048;
      o.offload.buffer_count = 3;
      const TrainResult nvme = train(o, *comm, quiet);
      ASSERT_EQ(nvme.losses, plain.losses) << "nvme offload, stage " << stage << " " << dtype_name(dt);
      EXPECT_EQ(nvme.val_loss, plain.val_loss);
    }
}

}  // namespace
}  // namespace tz
