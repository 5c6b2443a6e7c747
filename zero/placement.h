// Where each state class of each flat group lives on this rank, and what its lifecycle does, decided
// once from the stage, the offload settings and the world (a pure function). The engine and the memory
// plan read these per-group facts instead of branching on the stage (FSDP2's per-parameter state).
#pragma once

#include <vector>

#include "core/dtype.h"
#include "model/param_layout.h"
#include "zero/shard_map.h"
#include "zero/zero_options.h"

namespace tz {

struct GroupPlacement {
  // Working params: whole on the device, or (sharded) only this rank's shard, on `params_home`.
  bool params_sharded = false;
  Tier params_home = Tier::device;
  // Gradients: accumulated whole on the device over micro-steps and reduced once per step, or
  // reduced every micro-step and added into a shard on `grad_home` (device or host).
  bool grads_sharded = false;
  Tier grad_home = Tier::device;
  // The range of the padded group this rank's optimizer updates: the whole group, or its shard.
  Shard opt_range;
  Tier master_home = Tier::device, m_home = Tier::device, v_home = Tier::device;
  // fp32 working params on the device are the master themselves (no separate copy).
  bool master_is_params = false;
  // Which AdamW updates the group: the device's (the device tier), or the CPU Adam (any state off the
  // device), in the host tier it names (the optimizer's, or the host tier for states swapped from NVMe).
  Tier update_on = Tier::device;
  // Params whole but only opt_range updated here: all-gather them from every rank after the step.
  bool regather_after_step = false;
};

struct Placement {
  int world = 1, rank = 0;
  DType working = DType::f32;
  // How gradients are reduced: all-reduce of whole groups (replicated optimizer) or reduce-scatter.
  bool reduce_scatter = false;
  // Whether gradients need a collective at all (more than one rank, or sharded states at one rank).
  bool reduce = false;
  int embedding_group = 0;
  std::vector<GroupPlacement> groups;

  bool any(bool GroupPlacement::*flag) const;
};

Placement place(const ParamLayout& layout, const ShardMap& map, DType working, const ZeroOptions& zero,
                const OffloadOptions& offload);

}  // namespace tz
