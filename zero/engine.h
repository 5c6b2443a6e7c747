// The ZeRO engine on one rank: working params, fp32 gradients and AdamW states per flat group,
// partitioned by stage (0: replicated; 1: optimizer states and master sharded; 2: + gradients;
// 3: + parameters), the bucketed reductions and gathers, loss scaling, global-norm clipping and the
// optimizer step. It is the model's ParamProvider.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "core/device.h"
#include "model/gpt.h"
#include "model/param_layout.h"
#include "zero/grad_reducer.h"
#include "zero/loss_scaler.h"
#include "zero/lr_schedule.h"
#include "zero/optimizer_swapper.h"
#include "zero/param_gatherer.h"
#include "zero/shard_map.h"
#include "zero/zero_options.h"

namespace tz {

struct StepStats {
  int step = 0;  // optimizer steps applied so far
  float lr = 0;
  double grad_norm = 0;  // of the averaged, unscaled gradient
  bool skipped = false;  // fp16 overflow: no update on any rank
  float loss_scale = 1;  // the scale used for this step's backward
};

// One line of the memory plan: a state class on a tier and its bytes on this rank.
struct PlanRow {
  std::string what;
  Tier tier;
  std::size_t bytes;
};

class Engine final : public ParamProvider {
 public:
  // init: every group's fp32 initial values, identical on every rank (each keeps only what its stage
  // needs). grad_accum micro-steps make one optimizer step.
  // host: the host tier's allocator (its own budget), where offloaded states live.
  Engine(Device& dev, Device& host, Communicator& comm, const ParamLayout& layout, DType working,
         const std::vector<std::vector<float>>& init, AdamConfig adam, LrConfig lr, const ZeroOptions& zero,
         const LossScaleOptions& fp16, int grad_accum, const OffloadOptions& offload = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  CView acquire(int group, Pass pass) override;
  void release(int group, Pass pass) override;
  float* grad(int group) override;
  void grad_ready(int group) override;

  // Brackets each micro-step's forward + backward; `last` marks the one before step().
  void begin_micro_step(bool last);
  void end_micro_step();
  // The factor the loss gradient is multiplied by this micro-step (loss scale / grad_accum).
  float dloss_scale() const;

  // Reduces what is left, checks for overflow, clips by the global norm, applies AdamW to this rank's
  // shards, re-gathers params where the stage keeps them whole, zeroes the gradients.
  StepStats step();

  int stage() const { return stage_; }
  const ShardMap& shard_map() const { return map_; }
  Communicator& comm() { return comm_; }
  // The accumulated gradient this rank keeps for group g: the whole (padded) group at stages 0-1,
  // this rank's shard at stages 2-3 (for inspection and fault injection in tests).
  float* grad_accumulator(int g) { return stage_ <= 1 ? grad_full_[g].data() : grad_shard_[g].data(); }
  // The full fp32 master values of a group, gathered from every rank (collective: all ranks call it).
  std::vector<float> gather_master(int group);
  // Device bytes of states that persist across steps (params, grads, master, Adam m and v) and of the
  // transient buffers (buckets, gathered parameters, backward gradient buffers), as allocated.
  std::size_t persistent_bytes() const { return persistent_bytes_; }
  // The same, on the host tier (offloaded states).
  std::size_t host_persistent_bytes() const { return host_persistent_bytes_; }
  // Every buffer the engine allocated, by state class and tier (the printed plan).
  const std::vector<PlanRow>& plan() const { return plan_; }
  // Bytes of this rank's states in the NVMe store (0 without NVMe offload).
  std::size_t nvme_bytes() const { return nvme_budget_.used(); }
  const MemoryBudget& nvme_budget() const { return nvme_budget_; }
  // Traffic of the NVMe optimizer swap since the last reset (null without NVMe offload).
  SwapStats* swap_stats() { return swapper_ ? &swapper_->stats() : nullptr; }
  // Traffic of NVMe-resident parameter shards (fetches before gathers, write-backs after the step);
  // wait_seconds counts only the time blocked on fetches and write-backs. Null without them.
  SwapStats* param_io_stats();
  NvmeStore* nvme_store() { return store_.get(); }
  std::size_t transient_bytes() const { return transient_bytes_; }

 private:
  bool full_params(int g) const { return stage_ < 3 || persistent_[g]; }
  void note(const std::string& what, Tier tier, std::size_t bytes);
  void* work_ptr(int g);
  float* master_ptr(int g);            // the master values of this rank's optimizer range
  std::size_t opt_begin(int g) const;  // first element (in the padded group) this rank updates
  std::size_t opt_count(int g) const;
  float* reduced_grad_ptr(int g);  // the reduced gradient over this rank's optimizer range
  void progress();

  Device& dev_;
  Device& host_;
  Communicator& comm_;
  const ParamLayout& layout_;
  ShardMap map_;
  DType working_;
  AdamConfig adam_;
  LrConfig lr_;
  int stage_;
  int grad_accum_;
  std::size_t allgather_bucket_;
  LossScaler scaler_;
  bool fp16_;
  int step_ = 0;
  bool last_micro_ = true;
  std::vector<bool> persistent_;
  std::size_t persistent_bytes_ = 0, transient_bytes_ = 0, host_persistent_bytes_ = 0;
  OffloadOptions offload_;
  std::vector<PlanRow> plan_;

  std::vector<Buffer<std::uint8_t>> work_;  // working params: full or this rank's shard
  std::vector<Buffer<float>> master_;       // empty when fp32 working params serve as master
  std::vector<Buffer<float>> m_, v_;
  std::vector<Buffer<float>> grad_full_;   // stages 0-1: accumulated full gradients
  std::vector<Buffer<float>> grad_shard_;  // stages 2-3: accumulated gradient shards
  Buffer<float> grad_big_, grad_small_;    // stages 2-3: backward's transient full gradients
  int grad_big_group_ = -1, grad_big_owner_ = -1, grad_small_owner_ = -1;
  bool separate_master_ = true;  // false: fp32 working params on the device are the master
  MemoryBudget nvme_budget_{"nvme"};
  std::unique_ptr<NvmeStore> store_;
  std::unique_ptr<OptimizerSwapper> swapper_;
  bool param_nvme_ = false;               // stage 3 parameter shards live in the NVMe store
  std::vector<std::uint64_t> param_off_;  // their offsets there
  AlignedBuffer param_scratch_;           // updated shards are written back from here
  MemoryBudget* param_scratch_budget_ = nullptr;
  std::size_t fetch_staging_bytes_ = 0;
  SwapStats param_io_;
  std::unique_ptr<GradReducer> reducer_;
  std::unique_ptr<ParamGatherer> gatherer_;
};

}  // namespace tz
