// A fourth memory tier for tests: host memory under another name ("host2") and a budget of its own, from
// a pinned host pool of its own. What it changes is only where the states' bytes are counted and taken
// from; the CPU reaches them as it reaches the host tier's, so a run with states there trains bitwise
// like one with them on the host tier.
#pragma once

#include "zero/tier.h"

namespace tz::testing {

// Registers the pool and the tier once per process (before the devices that should have the pool are
// made) and returns the tier.
inline Tier second_host_tier() {
  static const Tier t = [] {
    TierTraits tt;
    tt.name = "host2";
    tt.offload_names = {"host2"};
    tt.medium = TierMedium::host;
    tt.memory = register_host_pool("host2");
    tt.budget_flag = "--host2-mem";
    return register_tier(std::move(tt));
  }();
  return t;
}

}  // namespace tz::testing
