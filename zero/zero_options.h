// Optimizer, ZeRO and loss-scaling settings (DeepSpeed's optimizer, zero_optimization and fp16
// sections), shared by the engine and the training options.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/adam_compressed.h"
#include "zero/tier.h"


namespace tz {

struct AdamConfig {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.01f;
  float grad_clip = 1.0f;  // max global gradient norm; 0 disables clipping
};

// ZeRO partitioning (DeepSpeed's zero_optimization section). Sizes count elements, as DeepSpeed's do.
struct ZeroOptions {
  int stage = 0;             // 0: data parallel; 1: optimizer states; 2: + gradients; 3: + parameters
  bool overlap_comm = true;  // start each bucket's collective as soon as it is ready
  bool contiguous_gradients =
      true;  // reduced gradients land in one contiguous shard buffer (always true here)
  std::size_t reduce_bucket_size = 500'000'000;  // gradient elements per reduce-scatter / all-reduce
  std::size_t allgather_bucket_size =
      500'000'000;  // parameter elements per all-gather after the step (stages 1-2)
  std::size_t prefetch_bucket_size = 50'000'000;    // stage 3: parameter elements gathered ahead of use
  std::size_t max_live_parameters = 1'000'000'000;  // stage 3: gathered parameter elements alive at once
  std::size_t param_persistence_threshold =
      100'000;  // stage 3: groups smaller than this stay whole on every rank
  // The largest message, in bytes, the MPI communicator reduces as one call (Communicator::set_piece_bytes;
  // 0: whole messages): bounds what Open MPI allocates per collective. NCCL's buffers are its own.
  std::size_t comm_piece_bytes = std::size_t(4) << 20;
};

// Dynamic (or static) loss scaling for fp16, as DeepSpeed's fp16 section.
struct LossScaleOptions {
  float loss_scale = 0;          // 0: dynamic; > 0: this static scale
  int initial_scale_power = 16;  // dynamic scale starts at 2^this
  int loss_scale_window = 1000;  // steps without overflow before the scale doubles
  int hysteresis = 2;            // overflows tolerated before the scale halves
  float min_loss_scale = 1;      // the scale never goes below this
};

// ZeRO-Offload / ZeRO-Infinity (DeepSpeed's offload_optimizer, offload_param and aio sections).
// Whether the CPU Adam of an offloaded group starts during backward, speculatively (SpeculativeAdam):
// automatic = on a cuda device (on a cpu device it would compete with backward for the cores).
enum class OptimizerOverlap { automatic, on, off };
OptimizerOverlap parse_optimizer_overlap(const std::string& s);
std::string optimizer_overlap_name(OptimizerOverlap o);

struct OffloadOptions {
  Tier optimizer = Tier::device;    // fp32 master, Adam m and v (and the fp32 gradient shards, stages 2-3)
  Tier param = Tier::device;        // stage 3: the working-parameter shards
  Tier activations = Tier::device;  // the activation checkpoints (each block's input residual stream)
  std::vector<std::string> nvme_paths;
  // The budget of each tier but the device's (TrainOptions::device_mem), bytes: --host-mem, --nvme-mem.
  PerTier<std::size_t> mem = PerTier<std::size_t>(kUnlimited);
  std::vector<int> numa_budget_nodes;  // the nodes --numa-mem gives budgets for (each must exist to train)
  // The host tier is always locked where RLIMIT_MEMLOCK allows; pin_memory makes a refused lock an
  // error unless allow_unpinned (DeepSpeed's pin_memory).
  bool pin_memory = false;
  bool allow_unpinned = false;
  int buffer_count = 4;                                 // staging buffers in the NVMe swap ring
  std::size_t sub_group_size = 1'000'000'000;           // optimizer elements per pipeline stage
  std::size_t aio_block_size = 1 << 20;
  int aio_queue_depth = 8;
  // With optimizer = host: the share of each optimizer class's bytes (fp32 master, Adam m, Adam v) that
  // lives on the host tier; the rest stays on the device (DeepSpeed's offload_optimizer.ratio, here
  // settable per class). Whole flat groups move, in group order, until the share is reached.
  double host_ratio_master = 1.0, host_ratio_m = 1.0, host_ratio_v = 1.0;
  OptimizerOverlap overlap_optimizer = OptimizerOverlap::automatic;
  // The share of the qualifying optimizer elements the speculation covers, taken from the groups
  // backward hands over first (which have the most backward left to hide their Adam behind); each
  // covered element costs 12 + working-dtype bytes of pinned host memory.
  double overlap_optimizer_share = 0.5;
  // The formats of the optimizer states (issue 36; core/adam_compressed.h): Adam m and v, and the master.
  // Anything but fp32 is held on the host tier only (--offload-optimizer cpu); place() refuses the rest.
  MomentFormat optimizer_states = MomentFormat::fp32;
  MasterFormat master_weights = MasterFormat::fp32;
  std::uint64_t rounding_seed = 0;  // keys the stochastic rounding of bf16 states (plan_inputs: --seed)
  bool compressed_states() const {
    return optimizer_states != MomentFormat::fp32 || master_weights != MasterFormat::fp32;
  }
};

}  // namespace tz
