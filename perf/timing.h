// Shared benchmark helpers: the clock and the median every benchmark reports.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace tz::bench {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// The median (mean of the middle two for an even count).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace tz::bench
