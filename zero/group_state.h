// One flat group's states on this rank, where its placement put them: the working params (whole or
// this rank's shard), the gradient (whole accumulator or reduced shard), the fp32 master and Adam m, v
// over the optimizer range (absent when they live on NVMe, the master when fp32 params serve as it).
// Each is a PlacedArray that knows its tier and how a piece of it reaches the host or goes back, so the
// step asks the state where it lives; pointer helpers give each range's start, so the step never asks
// which stage it runs at.
#pragma once

#include <cstdint>
#include <string>

#include "core/buffer_plan.h"
#include "model/param_layout.h"
#include "zero/compressed_states.h"
#include "zero/placement.h"
#include "zero/shard_map.h"
#include "zero/placed_array.h"

namespace tz {

// Names of a group's state buffers in the plan.
std::string params_buffer(const std::string& group);
std::string grad_buffer(const std::string& group);
std::string master_buffer(const std::string& group);
std::string adam_m_buffer(const std::string& group);
std::string adam_v_buffer(const std::string& group);

struct GroupState {
  int index = 0;
  const GroupSpec* spec = nullptr;
  GroupShards shards;
  Shard shard;  // this rank's shard of the padded group
  const GroupPlacement* place = nullptr;
  DType working = DType::f32;
  PlacedArray<std::uint8_t> params;
  PlacedArray<float> grad, master, m, v;
  // Compressed states (issue 36), in place of master, m and v (then empty): their layout, null with fp32
  // states, and their host buffers.
  const CompressedLayout* packed = nullptr;
  Buffer<std::uint8_t> packed_master, packed_m, packed_v;
  CompressedArrays compressed() { return {packed, packed_master.data(), packed_m.data(), packed_v.data()}; }

  // Takes the group's buffers from the plan, each with its home tier.
  void take(PlannedBuffers& planned);

  // The working params of padded-group element e (which must be held here: whole, or in the shard).
  std::uint8_t* params_at(std::size_t e) {
    return params.data() + (e - (place->params_sharded ? shard.offset : 0)) * dtype_size(working);
  }
  // Optimizer-range element i (0 = opt_range.offset) of the reduced gradient, master, m and v.
  float* grad_at(std::size_t i) {
    return grad.data() + (place->grads_sharded ? 0 : place->opt_range.offset) + i;
  }
  float* master_at(std::size_t i) {
    return place->master_is_params ? reinterpret_cast<float*>(params_at(place->opt_range.offset + i))
                                   : master.data() + i;
  }
  // The reduced gradient over this rank's shard (what the global norm sums on every rank).
  float* shard_grad() { return grad.data() + (place->grads_sharded ? 0 : shard.offset); }
  std::size_t grad_count() const { return place->grads_sharded ? shards.shard_count : shards.padded; }
};

}  // namespace tz
