// Warm-up + constant/cosine learning rate, as llm.c and nanoGPT compute it.
#include "zero/lr_schedule.h"

#include <cmath>

#include "core/error.h"

namespace tz {

LrSchedule parse_lr_schedule(const std::string& s) {
  if (s == "constant") return LrSchedule::constant;
  if (s == "cosine") return LrSchedule::cosine;
  TZ_FAIL("unknown --lr-schedule '", s, "': use constant or cosine");
}

std::string lr_schedule_name(LrSchedule s) { return s == LrSchedule::constant ? "constant" : "cosine"; }

float learning_rate(const LrConfig& c, int step) {
  if (c.warmup > 0 && step <= c.warmup) return c.lr * float(step) / float(c.warmup);
  if (c.schedule == LrSchedule::constant) return c.lr;
  int span = c.total_steps - c.warmup;
  if (span <= 0) return c.min_lr;
  double progress = double(step - c.warmup) / double(span);
  if (progress > 1.0) progress = 1.0;
  double coeff = 0.5 * (1.0 + std::cos(3.141592653589793 * progress));
  return float(c.min_lr + coeff * (c.lr - c.min_lr));
}

}  // namespace tz
