// PhaseClock: one timing event per phase boundary, made once for the run.
#include "train/phase_clock.h"

#include "core/error.h"

namespace tz {

PhaseClock::PhaseClock(Device& dev, int micro_steps) : clock_(dev.traits().event_clock) {
  TZ_CHECK(micro_steps >= 1, "a step has at least one micro-step, got ", micro_steps);
  for (int i = 0; i < micro_steps; ++i) {
    fwd_.push_back(dev.create_timing_event());
    bwd_.push_back(dev.create_timing_event());
    end_.push_back(dev.create_timing_event());
  }
  opt_begin_ = dev.create_timing_event();
  opt_end_ = dev.create_timing_event();
}

PhaseClock::Phases PhaseClock::read() {
  Phases p;
  for (std::size_t i = 0; i < fwd_.size(); ++i) {
    p.forward += bwd_[i]->ms_since(*fwd_[i]);
    p.backward += end_[i]->ms_since(*bwd_[i]);
  }
  p.optimizer = opt_end_->ms_since(*opt_begin_);
  return p;
}

}  // namespace tz
