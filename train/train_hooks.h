// Test seams of a training run, kept out of TrainOptions (what users set).
#pragma once

#include <functional>
#include <string>

#include "zero/engine.h"

namespace tz {

struct TrainHooks {
  EngineHooks engine;  // NVMe completion filter, a gradient rewrite before its reduction
  // Runs on every rank once the gradients of step s (1-based) are reduced and accumulated, just
  // before the optimizer step.
  std::function<void(int step, Engine& engine)> before_step;
  // Runs on every rank at each phase of a checkpoint save: "files written" (this rank's data file is
  // in the temporary folder), "manifest written" (rank 0, before the rename), "renamed" (rank 0,
  // before `latest` moves). Throwing simulates a crash at that point.
  std::function<void(const std::string& phase)> checkpoint_phase;
};

}  // namespace tz
