// `tierzero bench adam`: the CPU Adam as training runs it on offloaded states (group by group, tensor by
// tensor, in the engine's sub-group pieces, with the working-copy write, on the host tier, at the
// process's OpenMP thread count), next to its limit measured in the same run: the same calls with
// the arithmetic replaced by a pass that moves exactly the same bytes.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/adam_compressed.h"
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
  // Compressed states (issue 36): anything but fp32/fp32 runs that format beside the fp32 step instead of
  // the limit pass (run_adam_bench then prints the comparison's table, not today's).
  MomentFormat states = MomentFormat::fp32;
  MasterFormat master = MasterFormat::fp32;
};

// Bytes each parameter moves in one step: reads p, g, m, v (16 B) and writes p, m, v (12 B), plus the
// working copy's write (4 B fp32, 2 B bf16).
inline constexpr double kAdamBytesPerParam = 28.0;

// Runs the benchmark and returns its results as one JSON object ("wrong" > 0 in any row: a bit
// differs from the scalar reference); prints a table to stdout unless quiet.
nlohmann::json run_adam_bench(const AdamBenchOptions& opt, bool quiet);

// The compressed-state comparison (perf/adam_compressed_bench.cc): per repetition the fp32 step (fp32
// master and moments, the bf16 working write, as bf16 training runs today) and then adamw_compressed in
// the chosen formats over every tensor of the model (tensors under kCompressedMinElements with fp32
// moments); medians, bytes moved per parameter, time per parameter, the ratio to fp32, and "wrong": the
// elements of each tensor's first and last blocks whose bits differ from the scalar definition's.
nlohmann::json run_adam_compressed_bench(const AdamBenchOptions& opt, bool quiet);

}  // namespace tz
