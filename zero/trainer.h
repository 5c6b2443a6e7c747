// The training loop on every rank: data -> forward -> backward (x grad_accum) -> optimizer step, with
// a progress line and per-step JSONL metrics on rank 0, validation, and the safetensors export.
#pragma once

#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/communicator.h"
#include "zero/train_options.h"

namespace tz {

struct TrainResult {
  std::vector<float> losses;          // per step: the training loss averaged over micro-steps and ranks
  std::vector<int> skipped_steps;     // 1-based steps skipped for fp16 overflow
  std::vector<float> loss_scales;     // per step: the loss scale its backward used (1 without fp16)
  float val_loss = -1;                // last validation loss, -1 when there was no validation data
  double mean_step_ms = 0;
  std::size_t peak_device_bytes = 0;
  std::size_t persistent_bytes = 0;   // the engine's params, grads and optimizer states on this rank
  std::size_t transient_bytes = 0;    // buckets, gathered params, backward gradient buffers
  std::size_t host_persistent_bytes = 0;  // offloaded states on the host tier
  std::size_t plan_bytes[3] = {0, 0, 0};  // the printed plan's total per tier (device, host, nvme)
  std::size_t peak_bytes[3] = {0, 0, 0};  // measured peak per tier
  std::vector<nlohmann::json> metrics;  // the per-step records written to --metrics
};

class Engine;
using LogFn = std::function<void(const std::string&)>;

// Runs a whole training job; every rank of `comm` calls it. Progress lines go to `log` on rank 0
// (stdout by default). `before_step` (a test seam) runs on every rank once the gradients of step s
// (1-based) are reduced and accumulated, just before the optimizer step.
TrainResult train(const TrainOptions& opt, Communicator& comm, const LogFn& log = nullptr,
                  const std::function<void(int step, Engine&)>& before_step = nullptr);

}  // namespace tz
