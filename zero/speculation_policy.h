// When the CPU Adam runs speculatively during backward (zero/speculative_adam.h). A speculative update
// stands only when the step needs no clipping and no fp16 skip; otherwise it is restored and redone, which
// costs more than not speculating. A fresh model is clipped at every step (gradient norms far above the
// usual max norm of 1), a fine-tuned one almost never. So the run watches each step's outcome, speculated
// or not (a step says whether a speculative update would have stood), over its last kWindow steps: it
// stops speculating once at least kStopBad of them, and more than half, would have rolled back, and starts
// again once at most kResumeBad of a full window would have. Never slower than no speculation by more than
// the kStopBad steps it takes to notice.
#pragma once

#include <deque>

namespace tz {

class SpeculationPolicy {
 public:
  static constexpr int kWindow = 8;
  static constexpr int kStopBad = 4;
  static constexpr int kResumeBad = 1;

  // Whether the next step speculates.
  bool active() const { return active_; }
  // After each step: whether its speculative update would have stood (not clipped, not skipped), and
  // whether it speculated and rolled back (`speculated` false: the policy was off for it).
  void record(bool would_keep, bool speculated);
  // Steps that speculated, and of them those that rolled back, since the run began.
  int speculated_steps() const { return speculated_; }
  int rolled_back_steps() const { return rolled_back_; }
  double rollback_rate() const { return speculated_ ? double(rolled_back_) / speculated_ : 0.0; }

 private:
  std::deque<bool> window_;  // the last kWindow outcomes, true: would have kept
  bool active_ = true;
  int speculated_ = 0, rolled_back_ = 0;
};

}  // namespace tz
