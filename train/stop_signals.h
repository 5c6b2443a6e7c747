// How launch/'s signal handlers talk to a training run. The first SIGTERM, SIGINT or SIGHUP asks every
// rank to stop cleanly after the current step (save, validate, export, exit). While a checkpoint is
// being saved, a second one lets the save finish and then stops the run at once, without validation or
// export: no temporary folder or NVMe store is left. At any other time a second one ends the process
// at once (the signal's default action).
#pragma once

#include <atomic>

namespace tz {

struct StopSignals {
  std::atomic<int> first{0};        // the first signal's number (0: none yet)
  std::atomic<int> count{0};        // signals received
  std::atomic<bool> saving{false};  // a checkpoint save is in progress on this rank
};

// The handler's decision (async-signal-safe): records `sig`; true when the process must end now.
inline bool record_stop_signal(StopSignals& s, int sig) noexcept {
  int none = 0;
  s.first.compare_exchange_strong(none, sig);
  return s.count.fetch_add(1) + 1 >= 2 && !s.saving.load();
}

}  // namespace tz
