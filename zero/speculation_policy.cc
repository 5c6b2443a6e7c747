// SpeculationPolicy: a window of outcomes and two thresholds.
#include "zero/speculation_policy.h"

#include <algorithm>

namespace tz {

void SpeculationPolicy::record(bool would_keep, bool speculated) {
  if (speculated) {
    ++speculated_;
    if (!would_keep) ++rolled_back_;
  }
  window_.push_back(would_keep);
  if (int(window_.size()) > kWindow) window_.pop_front();
  const int n = int(window_.size());
  const int bad = int(std::count(window_.begin(), window_.end(), false));
  if (active_ && bad >= kStopBad && 2 * bad > n) active_ = false;
  else if (!active_ && n == kWindow && bad <= kResumeBad) active_ = true;
}

}  // namespace tz
