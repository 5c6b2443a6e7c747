// `tierzero bench step`: the time of one training step (forward, backward, AdamW) on synthetic
// tokens, with tokens/s and achieved GFLOP/s next to the machine's own matmul rate (the limit).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/device.h"
#include "model/gpt.h"
#include "model/gpt_config.h"

namespace tz {

struct StepBenchOptions {
  GptConfig model;
  std::string model_name;
  int micro_batch = 4;
  int seq_len = 64;
  std::vector<DType> dtypes{DType::f32, DType::bf16};
  int warmup_steps = 2;
  int steps = 5;
  ActivationCheckpointing checkpointing = ActivationCheckpointing::off;
};

// Model FLOPs of one step: tokens x (6 x N + 12 x L x C x T), N = parameters excluding wpe
// (the LM head's matmul runs over the padded vocabulary rows, so they count), the second term the
// attention scores and weighted sums (PaLM appendix B, as llm.c's mfu.h).
double step_flops(const GptConfig& cfg, int B, int T);

// GFLOP/s of C[M,N] = A[M,K] B[K,N] on the device's backend (median of `reps`, after warm-up).
double measure_matmul_gflops(Device& dev, DType dtype, int M, int N, int K, int reps);

// Runs the benchmark and returns its results as one JSON object; prints a table to stdout unless quiet.
nlohmann::json run_step_bench(const StepBenchOptions& opt, bool quiet);

}  // namespace tz
