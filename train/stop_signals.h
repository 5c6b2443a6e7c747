// How launch/'s signal handlers talk to a training run. A SIGTERM, SIGINT or SIGHUP is only recorded
// here (async-signal-safe); the handler never ends the process. The run reads the record: the first
// signal on any rank makes every rank stop cleanly after the current step (save, validate, export); any
// further signal on a rank, at any spacing, makes that stop leave out what it has not begun of
// validation and the exports. Either way the last step's checkpoint is saved (with --save-dir), no
// temporary file or NVMe store is left, and launch/ prints one line saying what was done.
#pragma once

#include <atomic>

namespace tz {

struct StopSignals {
  std::atomic<int> first{0};  // the first signal's number (0: none yet)
  std::atomic<int> count{0};  // signals received
};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler may only touch lock-free atomics");

// The handler's whole work: records `sig`.
inline void record_stop_signal(StopSignals& s, int sig) noexcept {
  int none = 0;
  s.first.compare_exchange_strong(none, sig);
  s.count.fetch_add(1);
}

}  // namespace tz
