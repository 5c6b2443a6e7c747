// Learning-rate schedule: linear warm-up, then constant or cosine decay to min_lr.
#pragma once

#include <string>

namespace tz {

enum class LrSchedule { constant, cosine };

LrSchedule parse_lr_schedule(const std::string& s);
std::string lr_schedule_name(LrSchedule s);

struct LrConfig {
  float lr = 3e-4f;
  float min_lr = 0.0f;
  int warmup = 0;       // steps of linear warm-up from lr/warmup to lr
  int total_steps = 1;  // cosine reaches min_lr at this step
  LrSchedule schedule = LrSchedule::constant;
};

// Learning rate at 1-based step `step`.
float learning_rate(const LrConfig& c, int step);

}  // namespace tz
