// Test seams of a training run, kept out of TrainOptions (what users set).
#pragma once

#include <functional>

#include "zero/engine.h"

namespace tz {

struct TrainHooks {
  EngineHooks engine;  // NVMe completion filter, a gradient rewrite before its reduction
  // Runs on every rank once the gradients of step s (1-based) are reduced and accumulated, just
  // before the optimizer step.
  std::function<void(int step, Engine& engine)> before_step;
};

}  // namespace tz
