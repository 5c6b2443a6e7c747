// The phases of a training step timed where the work runs: timing events on the compute stream (CUDA
// events on a GPU; the wall clock on the cpu, whose stream runs each operation as it is enqueued) around
// each micro-step's forward and backward and around the optimizer step. A host timer around asynchronous
// launches times the launches, not the work; these are read once the step's readback has waited for the
// stream, so reading them never stalls the GPU.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/device.h"

namespace tz {

class PhaseClock {
 public:
  PhaseClock(Device& dev, int micro_steps);

  void forward_begin(Stream& s, int micro) { fwd_[micro]->record(s); }
  void backward_begin(Stream& s, int micro) { bwd_[micro]->record(s); }
  void backward_end(Stream& s, int micro) { end_[micro]->record(s); }
  void optimizer_begin(Stream& s) { opt_begin_->record(s); }
  void optimizer_end(Stream& s) { opt_end_->record(s); }

  struct Phases {
    double forward = 0, backward = 0, optimizer = 0;  // ms, summed over the micro-steps
  };
  // The step's phases; every event above was recorded this step and the stream has passed them all.
  Phases read();
  // The clock the phases are measured on ("cuda events", "wall").
  const std::string& clock() const { return clock_; }

 private:
  std::vector<std::unique_ptr<Event>> fwd_, bwd_, end_;  // per micro-step
  std::unique_ptr<Event> opt_begin_, opt_end_;
  std::string clock_;
};

}  // namespace tz
