// The step-time model: from a memory plan (what each rank holds, where, and which collectives its
// stage runs), the gradient accumulation and a Hardware description, the time of one optimizer step
// split into compute, communication, host-device transfers, the optimizer and NVMe traffic, each with
// the part hidden behind compute and the part exposed. A pure function, like the plan.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "zero/hardware.h"
#include "zero/memory_plan.h"

namespace tz {

// Model FLOPs of one micro-step of one rank: tokens x the family's FLOPs per token (GPT-2: 6 N + 12 L C T,
// N = parameters excluding wpe, PaLM appendix B, as llm.c's mfu.h); activation checkpointing adds a
// forward (not counted in MFU).
double model_flops(const ModelConfig& cfg, int B, int T);

struct StepTerm {
  std::string what;
  double seconds = 0;  // the work itself
  double exposed = 0;  // the part the step waits for (the rest is hidden behind compute)
  std::string detail;
};

struct StepPrediction {
  std::vector<StepTerm> terms;
  double step_s = 0;
  double tokens_per_s = 0;  // all ranks
  double mfu = 0;           // model FLOPs / (step time x ranks x peak), 0 when the peak is unknown
  int nodes = 1;
  std::string hardware;
};

// Ranks fill nodes of hw.ranks_per_node in order. Throws when the plan's dtype has no rate on hw.
StepPrediction predict_step(const MemoryPlan& plan, const Hardware& hw, int grad_accum);

// The printed breakdown, and the same as JSON (seconds as milliseconds).
std::string prediction_table(const StepPrediction& p);
nlohmann::json prediction_json(const StepPrediction& p);

}  // namespace tz
