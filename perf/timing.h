// Shared benchmark helpers: the clock, the median every benchmark reports, and the timing of launches
// on a stream.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/stream.h"

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

// Milliseconds per call of `launch` (which enqueues work on `s`): `warmup` untimed calls, then `rounds`
// rounds of `iters` calls each, timed by the host clock from before the first launch to the end of a
// stream synchronize (so the launches queue back to back, as in training); the median over rounds of
// each round's mean.
template <typename F>
double ms_per_call(Stream& s, int warmup, int iters, int rounds, F&& launch) {
  for (int i = 0; i < warmup; ++i) launch();
  s.synchronize();
  std::vector<double> per_call;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) launch();
    s.synchronize();
    per_call.push_back(ms_since(t0) / iters);
  }
  return median(per_call);
}

}  // namespace tz::bench
