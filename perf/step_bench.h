// `tierzero bench step`: the time of one training step (forward, backward, AdamW) on synthetic
// tokens, with tokens/s and achieved GFLOP/s next to the machine's own matmul rate (the limit).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/device.h"
#include "model/activation_checkpoints.h"
#include "model/model_config.h"

namespace tz {

struct StepBenchOptions {
  ModelConfig model;
  std::string model_name;
  int micro_batch = 4;
  int seq_len = 64;
  std::vector<DType> dtypes{DType::f32, DType::bf16};
  int warmup_steps = 2;
  int steps = 5;
  ActivationCheckpointing checkpointing = ActivationCheckpointing::off;
  // Measure, per dtype, what the steps hold outside the plan's buffers ("resident_residue_bytes"): the
  // growth of the peak resident set (VmHWM) from before the buffers are made to the last step, less the
  // plan's bytes. Meaningful where nothing has run before in the process (bench calibrate runs it first).
  bool residue = false;
  // After the timed steps, profile `mix_steps` more forwards and backwards op by op and report, per dtype,
  // the fractions of their time in products, attention and the rest ("mix"; zero/step_mix.h). 0: none.
  int mix_steps = 0;
};

// GFLOP/s of C[M,N] = A[M,K] B[K,N] on the device's backend (median of `reps`, after warm-up).
double measure_matmul_gflops(Device& dev, DType dtype, int M, int N, int K, int reps);

// Runs the benchmark and returns its results as one JSON object; prints a table to stdout unless quiet.
nlohmann::json run_step_bench(const StepBenchOptions& opt, bool quiet);

}  // namespace tz
