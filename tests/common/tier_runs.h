// The small training runs the tier tests compare (tests/zero/tier_mpi_test.cc, numa_tier_mpi_test.cc):
// tiny in bf16 at a ZeRO stage, every group sharded, with a tier's states on it.
#pragma once

#include "train/trainer.h"

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

}  // namespace tz::testing
