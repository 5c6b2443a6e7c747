// The memory plan: a pure function of the model shape, the settings, the world size, the rank and the
// tier budgets, listing every buffer this rank will allocate (state class, memory kind, bytes: states,
// activations, scratch, buckets, gather slots, staging rings, scalars) and every NVMe extent. The engine
// and the model allocate exactly these buffers (PlannedBuffers); `tierzero plan` prints the same plan
// without allocating anything.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/buffer_plan.h"
#include "model/model_family.h"
#include "zero/grad_reducer.h"
#include "zero/hardware.h"
#include "zero/group_state.h"
#include "zero/optimizer_plan.h"
#include "zero/optimizer_swapper.h"
#include "zero/param_gatherer.h"
#include "zero/param_swapper.h"
#include "zero/placement.h"
#include "zero/shard_map.h"
#include "zero/zero_options.h"

namespace tz {

// The most bytes a plan may hold on one tier of one rank (64 PiB, far beyond any machine), and the
// largest world: plan_memory refuses more, so that its byte counts cannot wrap in 64 bits.
inline constexpr double kMaxPlanBytes = 72057594037927936.0;  // 2^56
inline constexpr int kMaxWorld = 1 << 20;

struct PlanInputs {
  DeviceKind device = DeviceKind::cpu;
  ModelConfig model;
  ModelShape shape;
  DType dtype = DType::f32;
  bool fp32_activations = false;  // activations in fp32 instead of dtype (--activation-dtype fp32)
  Precision precision() const { return fp32_activations ? Precision{dtype, DType::f32} : Precision{dtype}; }
  ActivationCheckpointing checkpointing = ActivationCheckpointing::off;
  ZeroOptions zero;
  OffloadOptions offload;
  int world = 1, rank = 0;
  // The ranks on each node (0: unknown, planned as one node): a run across nodes holds the network
  // transport's temporaries (MemoryLines::comm_between_nodes) where one node's hold its shared-memory
  // transport's.
  int ranks_per_node = 0;
  PerTier<std::size_t> budget = PerTier<std::size_t>(kUnlimited);  // bytes
  // What the rank holds outside its buffers: the data loader's tokens (data_loader_bytes, train/), and
  // what only a measurement can say (the hardware file's "memory"; not measured: lines of 0, said so).
  std::size_t data_bytes = 0;
  MemoryLines measured;
  std::string measured_source;  // the hardware file the measurement came from
};

// A line of what a rank holds outside its planned buffers (the data loader, the communicator's staging and
// temporaries, libraries): counted in what the plan holds (MemoryPlan::held), never allocated through it.
struct PlanLine {
  std::string what;
  Tier tier = Tier::host;
  std::size_t bytes = 0;
  std::string source;  // how the figure was found: "planned", "measured by ...", "derived from ..."
};

// One row of the printed plan: a state class on a tier and its bytes on this rank.
struct PlanRow {
  std::string what;
  Tier tier;
  std::size_t bytes;
};

struct MemoryPlan {
  PlanInputs in;
  ParamLayout layout;
  ShardMap map;
  Placement placement;
  BucketPlan buckets;
  GatherPlan gathers;
  OptimizerSwapPlan optimizer_swap;  // counts empty without the optimizer on NVMe
  ParamSwapPlan param_swap;
  std::size_t update_chunk = 0;           // elements per piece of a host-side optimizer update
  // Per group, its compressed states' layout over this rank's optimizer range (issue 36), empty with
  // fp32 states (every group then; with other formats, every group, all on the host tier).
  std::vector<CompressedLayout> compressed;
  std::vector<BufferSpec> buffers;        // device and pinned host memory, model included
  std::uint64_t nvme_bytes = 0;           // the NVMe store: optimizer states, then parameter shards
  std::vector<PlanLine> outside;          // held outside the buffers (outside_lines)

  // What the optimizer step reads of this plan (a view of its placement: valid while the plan lives).
  OptimizerPlan optimizer() const;

  // The planned buffers on a tier: what the tier's allocator hands out (and its peak, measured).
  std::size_t total(Tier t) const;
  // What the rank holds on a tier: its buffers and the lines outside them. Budgets are checked against this,
  // and it is what the process's resident growth is compared with.
  std::size_t held(Tier t) const;
  // Bytes of the states that persist across steps (params, grads, master, m, v) on a tier.
  std::size_t state_bytes(Tier t) const;
  // By state class and tier, in first-appearance order.
  std::vector<PlanRow> rows() const;
  // The table `train` and `plan` print, with each tier's total against its budget.
  std::string table() const;
  // With compressed states, the line saying their bytes against fp32's (with its newline); else "".
  std::string compressed_line() const;
  // "" when every tier fits its budget; else the first tier that does not, its need, the budget, the
  // shortfall and the largest classes there. check_fits() throws it.
  std::string fit_problem() const;
  void check_fits() const;
};

// Throws, naming the flags, for shapes whose buffers would exceed kMaxPlanBytes or a world beyond kMaxWorld.
MemoryPlan plan_memory(const PlanInputs& in);

// NCCL's buffers on each device of a world of 2 or more, derived from its documentation until a GPU
// measures them: NCCL_BUFFSIZE (default 4 MiB) for a send and a receive connection to each of a ring's
// 2 neighbours, on each of kNcclChannels channels (NCCL opens 16 or more on an NVLink node).
inline constexpr int kNcclChannels = 16;
inline constexpr std::size_t kNcclBufferBytes = std::size_t(4 << 20) * 2 * 2 * kNcclChannels;

// The lines outside the buffers for a plan (docs/planning.md#outside-the-buffers): the data loader; with
// collectives on the host (a cpu device) at world > 1, the communicator's staging and Open MPI's
// temporaries (measured at the calibrated piece and scaled to this one; with whole messages, twice the
// largest reduction, as Open MPI 4.1's libnbc allocates); and the libraries (oneDNN's kernels, OpenMP's
// stacks) as measured; with NCCL (a cuda device) at world > 1, its buffers on the device (derived).
std::vector<PlanLine> outside_lines(const MemoryPlan& p);

// The training loop's scalars on the device and their readback: the training loss sum, the stop flag
// (reduced with it), the validation loss sum.
inline constexpr const char* kLossSums = "loss sums";
inline constexpr const char* kLossReadback = "loss readback";
// The micro-batch's input and target tokens, staged in pinned memory for their copy up (two sets, used in
// turn, so the next batch is written while the last one's copy may still be pending).
inline constexpr const char* kTokenStaging = "token staging";

}  // namespace tz
