// The --metrics records that frame a run (docs/metrics.md): its start (a fresh run's first line), its
// resume (a resumed run's first line, after the records of the runs before it) and its end.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "train/train_options.h"
#include "zero/memory_plan.h"

namespace tz {

// What every start or resume record says about the run.
struct RunIdentity {
  std::string run_id;
  std::vector<std::string> hosts;     // per rank
  std::uint64_t tokens_per_step = 0;  // micro-batch x seq-len x grad-accum x ranks
};

// The run's settings as one flat object of strings, numbers and bools.
nlohmann::json settings_record(const TrainOptions& opt);

// {"event": "start" (step 0) or "resume" (step = the checkpoint's), run_id, step, world_size, hosts,
// time (UTC, ISO 8601), tokens_per_step, steps, settings, plan_peak_bytes {device, host, nvme}}.
nlohmann::json run_marker_record(const std::string& event, int step, const RunIdentity& id,
                                 const TrainOptions& opt, const MemoryPlan& plan);

// {"event": "end", "step": the last step trained, "signal": the signal that stopped it or 0}.
nlohmann::json run_end_record(int last, int signal);

// This machine's host name: the log context's, else gethostname(2)'s.
std::string this_host();

}  // namespace tz
