// `tierzero bench adam`: CPU Adam's time per step over a large shard, in GB/s of memory traffic next to
// the limit measured in the same run (Adam's access pattern with no arithmetic).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>

#include "offload/cpu_adam.h"

namespace tz {

struct AdamBenchOptions {
  std::size_t params = 100'000'000;
  int threads = 0;  // what the user asked for, reported only: OMP_NUM_THREADS decides
  int warmup_reps = 3;
  int reps = 10;                  // timed repetitions of every pass, interleaved; the median is reported
  std::optional<CpuAdamIsa> isa;  // default: the path cpu_adamw chooses
  bool core_backend = true;       // also time the core CPU backend's generic adamw
};

// Bytes each parameter moves in one step: reads p, g, m, v (16 B) and writes p, m, v (12 B), plus the
// working copy's write.
inline constexpr double kAdamBytesPerParam = 28.0;

// Runs the benchmark and returns its results as one JSON object; prints a table to stdout unless quiet.
nlohmann::json run_adam_bench(const AdamBenchOptions& opt, bool quiet);

}  // namespace tz
