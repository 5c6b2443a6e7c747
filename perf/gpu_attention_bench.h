// `tierzero bench gpu-attention`: Backend::attention_forward and attention_backward (causal, activations in
// a chosen dtype) at gpt2-xl's shape and a wider one, in TFLOP/s against the card's bf16 dense peak.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "core/device.h"
#include "perf/gpu_limits.h"

namespace tz {

// One benchmarked shape, GPT-2's multi-head form (core/backend.h's AttentionShape::multi_head).
struct GpuAttentionShape {
  int B = 0, T = 0, C = 0, NH = 0;
};

struct GpuAttentionOptions {
  // gpt2-xl at micro-batch 8, seq-len 1024 (head size 64), and B=4, T=2048, C=2048, NH=16 (head size 128).
  std::vector<GpuAttentionShape> shapes{{8, 1024, 1600, 25}, {4, 2048, 2048, 16}};
  int warmup = 3, iters = 20, rounds = 3;
  DType act = DType::f32;  // qkv, out, dout and dqkv (f32, bf16 or f16: cuDNN's attention runs 16-bit ones)
};

// Times forward and backward separately (backward after one forward, whose output and saved rows it
// reads), counts FLOPs as FlashAttention-2 does (causal: half the square), checks that out and dqkv
// are finite (a failed kernel leaves garbage), and returns one JSON object; prints a table unless quiet.
nlohmann::json run_gpu_attention_bench(Device& dev, const GpuLimits& limits, const GpuAttentionOptions& opt,
                                       bool quiet);

}  // namespace tz
