// The training loop every rank runs: plan -> allocate -> data -> forward -> backward (x grad_accum) ->
// optimizer step, with a progress line and per-step JSONL metrics on rank 0, validation, and the
// safetensors export. It sits above the engine (zero/) and the model (model/).
#pragma once

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "train/stop_signals.h"
#include "train/train_hooks.h"
#include "train/train_options.h"
#include "zero/memory_plan.h"

namespace tz {

struct TrainResult {
  std::vector<float> losses;       // per step: the training loss averaged over micro-steps and ranks
  std::vector<int> skipped_steps;  // 1-based steps skipped for fp16 overflow
  std::vector<float> loss_scales;  // per step: the loss scale its backward used (1 without fp16)
  float val_loss = -1;             // last validation loss, -1 when there was no validation data
  double mean_step_ms = 0;
  std::size_t persistent_bytes = 0;       // the plan's params, grads and optimizer states on the device
  std::size_t host_persistent_bytes = 0;  // the same on the host tier (offloaded states)
  PerTier<std::size_t> plan_bytes;      // the plan's buffers per tier (what each tier's allocator hands out)
  PerTier<std::size_t> plan_held_bytes; // and with the lines outside the buffers (MemoryPlan::held)
  PerTier<std::size_t> peak_bytes;      // peak per tier, as the allocators' budgets saw it
  // The growth of the process's peak resident set (VmHWM) over its resident set when train() began: the
  // kernel's count, independent of the plan (0 where /proc cannot be read).
  std::size_t resident_growth_bytes = 0;
  std::vector<nlohmann::json> metrics;  // the per-step records written to --metrics
  // A stop signal (the same on every rank): the run stopped after step stopped_after (or, when the
  // signal came after the last step, finished); stop_signal is the highest first signal any rank
  // received, stop_signals the most any one rank received (stop_rank). 0: no signal.
  int stopped_after = 0;
  int stop_signal = 0;
  int stop_signals = 0, stop_rank = -1;
  std::vector<std::string> left_out;  // what a second signal left out ("validation", "--save-safetensors", ...)
  std::string checkpoint;  // the last checkpoint this run saved ("" when none)
};

using LogFn = std::function<void(const std::string&)>;

// What train() plans for these options on one rank (a pure function; `tierzero plan` prints it).
PlanInputs plan_inputs(const TrainOptions& opt, int world, int rank);

// Runs a whole training job; every rank of `comm` calls it. Progress lines go to `log` on rank 0
// (stdout by default). `stop` (launch/'s SIGTERM, SIGINT and SIGHUP handler sets it; train/stop_signals.h):
// a first signal on any rank makes every rank finish the current step, save, validate, write the exports
// and return with stopped_after set; once any rank has had a second signal (at any time), every rank
// leaves out the validation and exports not yet begun (listed in left_out) after the checkpoint of the
// last step. NVMe stores are removed on the way out as after any run.
TrainResult train(const TrainOptions& opt, Communicator& comm, const LogFn& log = nullptr,
                  const TrainHooks& hooks = {}, StopSignals* stop = nullptr);

}  // namespace tz
