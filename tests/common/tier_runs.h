// The small training runs the tier tests compare (tests/zero/tier_mpi_test.cc, numa_tier_mpi_test.cc):
// tiny in bf16 at a ZeRO stage, every group sharded, with a tier's states on it.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "comm/communicator.h"
#include "tests/common/error_message.h"
#include "train/trainer.h"
#include "zero/memory_plan.h"

namespace tz::testing {

inline void quiet(const std::string&) {}

inline TrainOptions tiny_tier_run(int stage, int steps) {
  TrainOptions o;
  o.model = model_preset("tiny");
  o.steps = steps;
  o.lr.lr = 1e-3f;
  o.log_every = 0;
  o.val_batches = 2;
  o.dtype = DType::bf16;
  o.zero.stage = stage;
  o.zero.reduce_bucket_size = 40'000;
  o.zero.allgather_bucket_size = 40'000;
  o.zero.param_persistence_threshold = 0;
  return o;
}

// The optimizer states (and at stage 3 the parameter shards) on tier t.
inline TrainOptions offloaded(TrainOptions o, Tier t) {
  o.offload.optimizer = t;
  if (o.zero.stage == 3) o.offload.param = t;
  return o;
}

// A run on tier t against the same run on the host tier: the same losses and validation loss bit for bit,
// and the states' bytes moved from the host tier's allocator to t's, all of them used.
inline void expect_like_the_host_tier(const TrainResult& host, const TrainResult& other, Tier t, std::size_t steps) {
  ASSERT_EQ(host.losses.size(), steps);
  EXPECT_EQ(other.losses, host.losses);  // bitwise
  EXPECT_EQ(other.val_loss, host.val_loss);
  EXPECT_GT(other.plan_bytes[t], 0u);
  EXPECT_EQ(other.peak_bytes[t], other.plan_bytes[t]);
  EXPECT_EQ(other.plan_bytes[t] + other.plan_bytes[Tier::host], host.plan_bytes[Tier::host]);
  EXPECT_EQ(other.peak_bytes[Tier::host], other.plan_bytes[Tier::host]);
  EXPECT_EQ(host.peak_bytes[t], 0u);
  EXPECT_EQ(other.plan_bytes[Tier::device], host.plan_bytes[Tier::device]);
}

// Stage 3 with everything on tier t: one step trains with exactly the plan's bytes as t's budget; the
// error of a budget one byte short.
inline std::string one_byte_short_error(Tier t, Communicator& comm) {
  TrainOptions o = offloaded(tiny_tier_run(3, 1), t);
  const std::size_t need = plan_memory(plan_inputs(o, comm.size(), comm.rank())).total(t);
  o.offload.mem[t] = need;
  EXPECT_EQ(train(o, comm, quiet).losses.size(), 1u);  // exactly enough
  o.offload.mem[t] = need - 1;
  return error_message([&] { train(o, comm, quiet); });
}

}  // namespace tz::testing
