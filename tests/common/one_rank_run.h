// Training runs on one rank for the checkpoint and save-dir tests: the tiny preset at a fixed learning
// rate, its log lines kept, and the error a refused run throws.
#pragma once

#include <string>
#include <vector>

#include "core/error.h"
#include "train/trainer.h"

namespace tz::testing {

inline TrainOptions tiny_run(int steps, const std::string& save_dir) {
  TrainOptions o;
  o.model = model_preset("tiny");
  o.steps = steps;
  o.lr.lr = 1e-3f;
  o.log_every = 0;
  o.save_dir = save_dir;
  return o;
}

// The log lines of the last run_one_rank.
inline std::vector<std::string>& run_log() {
  static std::vector<std::string> lines;
  return lines;
}

inline TrainResult run_one_rank(const TrainOptions& o, const TrainHooks& hooks = {}, StopSignals* stop = nullptr) {
  auto comm = make_self_comm();
  run_log().clear();
  return train(o, *comm, [](const std::string& s) { run_log().push_back(s); }, hooks, stop);
}

// The message of the tz::Error the run throws, or "(no error)".
inline std::string run_error(const TrainOptions& o) {
  try {
    run_one_rank(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace tz::testing
