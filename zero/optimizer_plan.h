// What the optimizer step and the speculative CPU Adam need of the memory plan: the placement, the
// update piece, the working dtype, the speculation settings and the order backward hands groups over.
// The memory plan makes one (MemoryPlan::optimizer()); the runtime reads only this, so the planner and
// the runtime do not include each other.
#pragma once

#include <cstddef>
#include <vector>

#include "core/dtype.h"
#include "zero/compressed_states.h"
#include "zero/placement.h"
#include "zero/zero_options.h"

namespace tz {

struct OptimizerPlan {
  const Placement* placement = nullptr;  // the memory plan's (it outlives the step)
  std::size_t update_chunk = 0;          // elements per piece of a host-side update
  DType dtype = DType::f32;              // the working params'
  OptimizerOverlap overlap = OptimizerOverlap::automatic;
  bool overlap_by_default = false;    // what `automatic` means on this device (its traits)
  double overlap_share = 0.5;         // --overlap-optimizer-share
  std::vector<int> backward_order;    // the groups in the order backward's gradients arrive
  // Per group, the compressed states' layout (empty: fp32 states), and the stochastic rounding's seed.
  const std::vector<CompressedLayout>* compressed = nullptr;
  std::uint64_t rounding_seed = 0;
};

}  // namespace tz
