// For the tests that drive the optimizer step without an engine (tests/zero/optimizer_step_test.cc,
// compressed_states_test.cc): tiny's plan inputs, and each group's GroupState on this rank made as the
// engine makes it, from a plan and its allocated buffers.
#pragma once

#include <vector>

#include "zero/memory_plan.h"

namespace tz::testing {

// tiny in bf16 at a stage, the optimizer on `optimizer`, 40,000-element all-gather buckets.
inline PlanInputs tiny_step_inputs(int stage, Tier optimizer, int world, int rank) {
  PlanInputs in;
  in.model = model_preset("tiny");
  in.shape = {2, 16};
  in.dtype = DType::bf16;
  in.zero.stage = stage;
  in.zero.allgather_bucket_size = 40'000;
  in.offload.optimizer = optimizer;
  in.world = world;
  in.rank = rank;
  return in;
}

inline std::vector<GroupState> plan_groups(const MemoryPlan& plan, PlannedBuffers& planned) {
  std::vector<GroupState> groups(std::size_t(plan.map.groups()));
  for (int g = 0; g < plan.map.groups(); ++g) {
    GroupState& s = groups[std::size_t(g)];
    s.index = g;
    s.spec = &plan.layout.groups[std::size_t(g)];
    s.shards = plan.map.group(g);
    s.shard = plan.map.shard(g);
    s.place = &plan.placement.groups[std::size_t(g)];
    s.working = plan.in.dtype;
    if (!plan.compressed.empty() && !in_file(s.place->master_home))
      s.packed = &plan.compressed[std::size_t(g)];
    s.take(planned);
  }
  return groups;
}

}  // namespace tz::testing
