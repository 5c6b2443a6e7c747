// `tierzero bench gpu-matmul`: Backend::gemm on the shapes of a gpt2-xl training step (forward, and the
// backward's input and weight gradients) and a large square, in TFLOP/s against the card's bf16 dense
// peak.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/device.h"
#include "perf/gpu_limits.h"

namespace tz {

struct MatmulCase {
  std::string name;
  GemmShape shape;
  Accumulate acc = Accumulate::no;
};

struct GpuMatmulOptions {
  DType dtype = DType::bf16;
  int tokens = 8192;  // B x T of the step: gpt2-xl at micro-batch 8, seq-len 1024
  int n_embd = 1600;
  int vocab = 50304;  // gpt2's padded vocabulary
  int square = 8192;
  int warmup = 5, iters = 20, rounds = 3;
};

// The products of one training step at these sizes, with the model's layouts (model/gpt.cc: weights
// [in, out], the LM head against wte [Vp, C] transposed), then the square.
std::vector<MatmulCase> gpt_step_matmuls(int tokens, int n_embd, int vocab, int square);

// Times every case, checks sampled elements against a host sum in double outside the timed loop
// (#wrong), and returns one JSON object; prints a table unless quiet.
nlohmann::json run_gpu_matmul_bench(Device& dev, const GpuLimits& limits, const GpuMatmulOptions& opt,
                                    bool quiet);

}  // namespace tz
