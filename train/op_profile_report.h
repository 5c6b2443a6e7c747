// `tierzero train --profile-ops N`: the per-op table of the profiled steps (core/op_profile.h) with the
// step's phases and its collectives: per op, calls and milliseconds per step, the share of the step, and
// the achieved TFLOP/s (matrix products, attention) or GB/s (everything else) against the hardware's peak.
// The same table on every device: CUDA events on a GPU, the wall clock on the cpu.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/communicator.h"
#include "core/op_profile.h"

namespace tz {

// What achieved rates are set against: the dense matmul peak in the run's dtype, device memory and the
// collectives' bus bandwidth (0: unknown, no percentage printed), and where the figures come from.
struct ProfilePeaks {
  double tflops = 0, memory_gbs = 0, comm_gbs = 0;
  std::string source;
};

struct ProfileWindow {
  int first = 0, last = 0;  // the steps profiled (1-based, inclusive)
  std::string note;         // why the window is not what was asked, if it is not
};

// The steps `--profile-ops n` profiles in a run of steps [start + 1, end]: from the second (the first
// warms up: cuBLASLt's plans, first-touch pages), n of them, as many as the run has; a run of one step
// profiles that step and says it includes the warm-up.
ProfileWindow profile_window(int n, int start, int end);

struct ProfileReport {
  ProfileWindow window;
  std::string clock;                           // "cuda events", "wall"
  double step_ms = 0;                          // per step, host time to the step's readback
  double forward_ms = 0, backward_ms = 0, optimizer_ms = 0;  // per step, on the clock
  std::vector<OpRow> ops;                      // summed over the window
  CommStats comm;                              // the collectives over the window
  ProfilePeaks peaks;

  int steps() const { return window.last - window.first + 1; }
  // The table, rows by time, most first.
  std::string table() const;
  // The same as a metrics record: {"profile": {...}}.
  nlohmann::json record() const;
};

}  // namespace tz
