// The training loop: data -> forward -> backward -> optimizer step, with a progress line, per-step
// JSONL metrics, validation and the final safetensors export.
#pragma once

#include <functional>
#include <vector>

#include "zero/train_options.h"

namespace tz {

struct TrainResult {
  std::vector<float> losses;      // training loss per step
  float val_loss = -1;            // last validation loss, -1 when there was no validation data
  double mean_step_ms = 0;
  std::size_t peak_device_bytes = 0;
};

// Runs a whole training job on this rank. Progress lines go to `log` (stdout by default).
TrainResult train(const TrainOptions& opt, const std::function<void(const std::string&)>& log = nullptr);

}  // namespace tz
