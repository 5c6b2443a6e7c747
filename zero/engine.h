// The ZeRO engine on one rank: the model's ParamProvider. It owns each flat group's states where the
// memory plan put them (GroupState), the gradient reducer, the stage-3 gatherer, the NVMe swappers
// and the optimizer step, all allocated from the plan before step 1. Per step it runs the micro-step
// protocol (gather on acquire, reduce on grad_ready, flush at the end of a micro-step) and step().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "core/buffer_plan.h"
#include "core/device.h"
#include "model/param_provider.h"
#include "offload/nvme_store.h"
#include "zero/grad_reducer.h"
#include "zero/group_state.h"
#include "zero/loss_scaler.h"
#include "zero/lr_schedule.h"
#include "zero/memory_plan.h"
#include "zero/optimizer_step.h"
#include "zero/optimizer_swapper.h"
#include "zero/param_gatherer.h"
#include "zero/param_swapper.h"
#include "zero/speculation_policy.h"
#include "zero/state_format_convert.h"
#include "zero/zero_options.h"

namespace tz {

struct StepStats {
  int step = 0;  // optimizer steps applied so far
  float lr = 0;
  double grad_norm = 0;  // of the averaged, unscaled gradient
  bool skipped = false;  // fp16 overflow: no update on any rank
  float loss_scale = 1;  // the scale used for this step's backward
  // Groups whose CPU Adam ran during backward (SpeculativeAdam) and was kept, or rolled back and redone
  // (clipping) or undone (a skipped step); both 0 without speculation.
  int speculative_kept = 0, speculative_rolled_back = 0;
  // Whether this step speculated (the run has the speculative CPU Adam and its policy was on: see
  // zero/speculation_policy.h), whether the next step will, and the share of the speculated steps so far
  // that rolled back.
  bool speculated = false, speculate_next = false;
  double speculative_rollback_rate = 0;
};

// The optimizer and precision settings the engine runs with (the plan holds the ZeRO and offload ones).
struct EngineConfig {
  AdamConfig adam;
  LrConfig lr;
  LossScaleOptions fp16;
  int grad_accum = 1;
};

// Test seams, kept out of the user-facing options.
struct EngineHooks {
  // Rewrites the NVMe store's I/O completion results (inject -EIO, short reads, -EAGAIN).
  CompletionFilter nvme_completion_filter;
  // Runs just before group `group`'s gradient (device memory: write it through copies) is handed to
  // the reduction, with the 1-based number of the step being computed.
  std::function<void(int step, int group, float* grad, Stream& stream)> before_reduce;
};

// What a checkpoint keeps of the engine besides the states: the step counters and the loss scaler.
struct EngineState {
  int optimizer_steps = 0;  // updates applied (Adam's t; fp16-skipped steps do not count)
  int computing = 1;        // the 1-based step being computed next
  LossScaler::State scaler;
};

// Visits this rank's optimizer states in pieces: elements [begin, begin + n) of group g's optimizer
// range (GroupPlacement::opt_range) of the fp32 master, Adam m and v, as host arrays.
using StateVisit = std::function<void(int g, std::size_t begin, std::size_t n, float* master, float* m, float* v)>;

// Fills `values` (resized to the group's element count) with group g's fp32 initial values.
using GroupInit = std::function<void(int group, std::vector<float>& values)>;

class Engine final : public ParamProvider {
 public:
  // Takes every state buffer of the plan from `planned`; the plan must outlive the engine. `stream` is
  // the compute stream the model runs on.
  Engine(Device& dev, Stream& stream, Communicator& comm, const MemoryPlan& plan, PlannedBuffers& planned,
         const EngineConfig& cfg, const GroupInit& init, EngineHooks hooks = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  CView acquire(int group, Pass pass) override;
  void release(int group, Pass pass) override;
  float* grad(int group) override;
  void grad_ready(int group) override;

  // Brackets each micro-step's forward + backward; `last` marks the one before step().
  void begin_micro_step(bool last) { last_micro_ = last; }
  void end_micro_step();
  // The factor the loss gradient is multiplied by this micro-step (loss scale / grad_accum).
  float dloss_scale() const;

  // Reduces what is left, checks for overflow, clips by the global norm, applies AdamW to this rank's
  // ranges, writes the working params back where they live, zeroes the gradients.
  StepStats step();

  // The full fp32 master values of a group, gathered from every rank (collective: all ranks call it).
  std::vector<float> gather_master(int group);

  // Checkpoints (zero/engine_state.cc). state()/restore() move the counters and the scaler; visit_states
  // runs fn over every group's states in group order, in pieces of at most kStatePiece elements (or the
  // NVMe sub-group), staged in pageable host memory or the NVMe staging ring. `write` says whether what
  // fn leaves in master, m and v is stored back where they live (a resume), and how: as the states' own
  // values, or converted from other formats (zero/state_format_convert.h).
  static constexpr std::size_t kStatePiece = std::size_t(1) << 22;
  EngineState state() const;
  void restore(const EngineState& s);
  void visit_states(const StateVisit& fn, StateWrite write);
  // Group g's compressed states on this rank as they are held (layout null with fp32 states): tests read
  // their codes and absmax.
  CompressedArrays compressed_states(int g) { return groups_[std::size_t(g)].compressed(); }

  const MemoryPlan& plan() const { return plan_; }
  Communicator& comm() { return comm_; }
  // The communicator for host buffers (gather_master), when `comm` takes device buffers only (NCCL).
  void set_host_comm(Communicator& c) { host_comm_ = &c; }
  const MemoryBudget& nvme_budget() const { return nvme_budget_; }
  NvmeStore* nvme_store() { return store_.get(); }
  // NVMe traffic of the optimizer swap and of parameter shards since the last reset (null without).
  SwapStats* optimizer_io_stats() { return optimizer_swap_ ? &optimizer_swap_->stats() : nullptr; }
  SwapStats* param_io_stats();

 private:
  void open_store();
  void initialize(const GroupInit& init);
  void make_reducer(PlannedBuffers& planned);
  void make_gatherer(PlannedBuffers& planned);
  // The step's speculation counts, and its outcome recorded with the policy (would_keep: no clipping and
  // no skip).
  void count_speculation(StepStats& st, bool speculated, bool would_keep);

  Device& dev_;
  Stream& stream_;
  Communicator& comm_;
  Communicator* host_comm_ = &comm_;
  const MemoryPlan& plan_;
  EngineConfig cfg_;
  EngineHooks hooks_;
  LossScaler scaler_;
  bool fp16_;
  bool reduce_every_micro_step_;
  int step_ = 0;       // optimizer steps applied
  int computing_ = 1;  // the step being computed (1-based; a skipped step is computed again)
  bool last_micro_ = true;
  std::vector<GroupState> groups_;
  Buffer<float> backward_big_, backward_small_;  // backward's transient full gradients (sharded grads)
  int big_owner_ = -1, small_owner_ = -1;
  MemoryBudget nvme_budget_{"nvme"};
  Reservation nvme_reservation_;
  std::unique_ptr<NvmeStore> store_;
  std::unique_ptr<OptimizerSwapper> optimizer_swap_;
  std::unique_ptr<ParamSwapper> param_swap_;
  std::unique_ptr<GradReducer> reducer_;
  std::unique_ptr<ParamGatherer> gatherer_;
  std::unique_ptr<OptimizerStep> optimizer_;
  SpeculationPolicy spec_policy_;  // whether the speculative CPU Adam starts at the next step
  std::unique_ptr<Event> done_;
};

}  // namespace tz
