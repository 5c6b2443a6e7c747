// Capacity (ZeRO-Infinity): a model whose states take ~1 GiB does not fit 64 MiB of device memory and
// is refused with the budget error, but trains across the ranks with optimizer states and parameter
// shards on NVMe, for 20 steps, with the losses of the same run without a budget or offload.
#include <gtest/gtest.h>

#include <cmath>

#include "comm/communicator.h"
#include "core/error.h"
#include "tests/common/test_dir.h"
#include "train/trainer.h"

namespace tz {
namespace {

void quiet(const std::string&) {}

// 48 narrow blocks (width 320), byte vocabulary: 59M parameters, 18 bytes each in bf16 training = 1.0 GiB.
TrainOptions narrow_and_deep() {
  TrainOptions o;
  o.model = model_preset("tiny");
  o.model.n_layer = 48;
  o.model.n_head = 4;
  o.model.n_embd = 320;
  o.model.max_seq_len = 32;
  o.seq_len = 32;
  o.micro_batch = 1;
  o.steps = 20;
  o.log_every = 0;
  o.val_batches = 1;
  o.dtype = DType::bf16;
  o.checkpointing = ActivationCheckpointing::per_block;
  o.device_mem = 64ull << 20;
  o.zero.stage = 3;
  o.zero.param_persistence_threshold = 0;
  o.zero.reduce_bucket_size = 2'000'000;    // two 8 MB buckets, not the whole model
  o.zero.prefetch_bucket_size = 2'500'000;  // one block gathered ahead
  return o;
}

TEST(Capacity, AModelOfOneGibOfStatesFailsIn64MibWithoutOffloadAndTrainsWithNvmeOffload) {
  auto comm = make_mpi_world();
  const double states = 18.0 * double(narrow_and_deep().model.num_parameters());
  ASSERT_GT(states, 1.0e9);
  try {
    train(narrow_and_deep(), *comm, quiet);
    FAIL() << "expected the device budget error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("out of device memory budget"), std::string::npos) << m;
    EXPECT_NE(m.find("64.00 MiB"), std::string::npos) << m;
  }
  comm->barrier()->wait();  // every rank failed alike; start the second run together

  testing::TestDir dir;
  TrainOptions o = narrow_and_deep();
  o.offload.optimizer = Tier::nvme;
  o.offload.param = Tier::nvme;
  o.offload.nvme_paths = {dir.path()};
  o.offload.aio_block_size = 1 << 20;
  o.offload.sub_group_size = 4'000'000;
  TrainResult r = train(o, *comm, quiet);
  ASSERT_EQ(r.losses.size(), 20u);
  EXPECT_LE(r.peak_bytes[Tier::device], 64ull << 20);                          // the device budget held
  EXPECT_GT(double(r.plan_bytes[Tier::nvme]), 0.9 * states / comm->size());  // the states went to NVMe

  // The same 20 steps without a budget and without offload: offload moves bytes, not arithmetic.
  TrainOptions free = narrow_and_deep();
  free.device_mem = kUnlimited;
  TrainResult ref = train(free, *comm, quiet);
  EXPECT_EQ(r.losses, ref.losses);
  EXPECT_EQ(r.val_loss, ref.val_loss);
  EXPECT_LT(r.losses.back(), r.losses.front());  // and it learns
}

}  // namespace
}  // namespace tz
