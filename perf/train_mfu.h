// Model FLOP utilisation of a real training run, from the per-step records `tierzero train --metrics`
// writes: so the GPU step benchmark measures what training runs, with the step benchmark's FLOP count.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "model/model_config.h"

namespace tz {

struct TrainMfuOptions {
  std::string metrics;  // the JSONL file
  ModelConfig model;
  int seq_len = 1024;
  int world = 1;           // ranks the run used (tokens_per_s counts all of them)
  int skip = 2;            // first steps left out (warm-up: allocation, cuBLAS heuristics, page faults)
  double peak_tflops = 0;  // per device; 0: no MFU
  std::string peak_source;
};

// Median step time and phases over the steps kept, tokens/s, TFLOP/s per device (model FLOPs: tokens x
// the family's FLOPs per token, as model_flops counts them) and MFU against the peak. Throws when the file has no
// step left after `skip`.
nlohmann::json train_mfu(const TrainMfuOptions& opt);

}  // namespace tz
