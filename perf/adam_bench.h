// `tierzero bench adam`: the CPU Adam as training runs it on offloaded states (group by group, tensor by
// tensor, in the engine's sub-group pieces, with the working-copy write, on the host tier, at the
// process's OpenMP thread count), next to its limit measured in the same run: the same calls with
// the arithmetic replaced by a pass that moves exactly the same bytes.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/model_config.h"

namespace tz {

struct AdamBenchOptions {
  std::string model_name = "gpt2";
  ModelConfig model;
  std::vector<DType> working = {DType::f32, DType::bf16};  // one configuration per working dtype
  std::size_t sub_group_size = 1'000'000'000;              // offload_optimizer's sub_group_size
  int warmup_reps = 2;
  int reps = 7;  // timed repetitions of every pass, interleaved; medians are reported
};

// Bytes each parameter moves in one step: reads p, g, m, v (16 B) and writes p, m, v (12 B), plus the
// working copy's write (4 B fp32, 2 B bf16).
inline constexpr double kAdamBytesPerParam = 28.0;

// Runs the benchmark and returns its results as one JSON object ("wrong" > 0 in any row: a bit
// differs from the scalar reference); prints a table to stdout unless quiet.
nlohmann::json run_adam_bench(const AdamBenchOptions& opt, bool quiet);

}  // namespace tz
