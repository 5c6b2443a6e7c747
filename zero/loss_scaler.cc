// DeepSpeed's dynamic loss-scale update rule.
#include "zero/loss_scaler.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace tz {

LossScaler::LossScaler(const LossScaleOptions& o) : enabled_(true) {
  TZ_CHECK(o.loss_scale >= 0, "fp16.loss_scale must be >= 0 (0: dynamic), got ", o.loss_scale);
  TZ_CHECK(o.hysteresis >= 1, "fp16.hysteresis must be >= 1, got ", o.hysteresis);
  TZ_CHECK(o.loss_scale_window >= 1, "fp16.loss_scale_window must be >= 1, got ", o.loss_scale_window);
  dynamic_ = o.loss_scale == 0;
  scale_ = dynamic_ ? std::ldexp(1.0f, o.initial_scale_power) : o.loss_scale;
  min_scale_ = o.min_loss_scale;
  window_ = o.loss_scale_window;
  hysteresis_ = cur_hysteresis_ = o.hysteresis;
}

bool LossScaler::update(bool overflow) {
  if (!enabled_) return overflow;
  const bool at_min = !dynamic_ || scale_ <= min_scale_;
  overflows_at_min_ = overflow && at_min ? overflows_at_min_ + 1 : 0;
  TZ_CHECK(overflows_at_min_ < kMaxOverflowsAtMin, "fp16: ", kMaxOverflowsAtMin,
           " steps in a row overflowed at the smallest loss scale (", scale_,
           "); every step is being skipped: training diverged or fp16's range is too small for this model; "
           "lower --lr, use --dtype bf16, or lower --min-loss-scale");
  if (!dynamic_) return overflow;
  if (overflow) {
    // As DeepSpeed: with hysteresis h, the first h-1 overflows only count down; the h-th halves.
    if (cur_hysteresis_ <= 1)
      scale_ = std::max(scale_ / 2.0f, min_scale_);
    else
      --cur_hysteresis_;
    clean_steps_ = 0;
    return true;
  }
  if (++clean_steps_ % window_ == 0) {
    scale_ *= 2.0f;
    cur_hysteresis_ = hysteresis_;
  }
  return false;
}

void LossScaler::restore(const State& s) {
  TZ_CHECK(std::isfinite(s.scale) && s.scale > 0 && s.hysteresis_left >= 0 && s.clean_steps >= 0 &&
               s.overflows_at_min >= 0,
           "fp16 loss scaler state out of range (scale ", s.scale, ", hysteresis left ", s.hysteresis_left,
           ", clean steps ", s.clean_steps, ")");
  if (!enabled_) return;
  if (dynamic_) scale_ = s.scale;  // a static scale stays what the options say
  cur_hysteresis_ = s.hysteresis_left;
  clean_steps_ = s.clean_steps;
  overflows_at_min_ = s.overflows_at_min;
}

}  // namespace tz
