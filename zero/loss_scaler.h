// Loss scaling for fp16 as DeepSpeed's DynamicLossScaler: start at 2^initial_scale_power; an
// overflow skips the step and, once `hysteresis` overflows have been seen, halves the scale (not
// below min_loss_scale); `loss_scale_window` clean steps double it. A static scale never changes.
#pragma once

#include "zero/zero_options.h"

namespace tz {

class LossScaler {
 public:
  LossScaler() = default;  // disabled: scale 1, never skips
  explicit LossScaler(const LossScaleOptions& o);

  float scale() const { return scale_; }
  bool dynamic() const { return dynamic_; }
  // Records the step's outcome; returns true when the step must be skipped (overflow). Throws when
  // kMaxOverflowsAtMin overflows in a row happen at the smallest scale (static, or dynamic at
  // min_loss_scale): the scale cannot go lower, so training would skip forever.
  bool update(bool overflow);
  static constexpr int kMaxOverflowsAtMin = 20;

  // What a checkpoint keeps of the scaler: with the options, it resumes the same sequence of scales.
  struct State {
    float scale = 1.0f;
    int hysteresis_left = 2, clean_steps = 0, overflows_at_min = 0;
  };
  State state() const { return {scale_, cur_hysteresis_, clean_steps_, overflows_at_min_}; }
  void restore(const State& s);

 private:
  bool enabled_ = false, dynamic_ = false;
  float scale_ = 1.0f, min_scale_ = 1.0f;
  int window_ = 1000, hysteresis_ = 2, cur_hysteresis_ = 2, clean_steps_ = 0;
  int overflows_at_min_ = 0;
};

}  // namespace tz
