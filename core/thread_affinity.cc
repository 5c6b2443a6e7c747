// Core binding with sched_setaffinity / pthread_setaffinity_np.
#include "core/thread_affinity.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "core/error.h"

namespace tz {
namespace {

std::mutex g_mu;
std::vector<int> g_io;

cpu_set_t to_set(const std::vector<int>& cores) {
  cpu_set_t s;
  CPU_ZERO(&s);
  for (int c : cores) CPU_SET(c, &s);
  return s;
}

}  // namespace

std::vector<int> allowed_cores() {
  cpu_set_t s;
  CPU_ZERO(&s);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof s, &s) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &s)) out.push_back(c);
  return out;
}

CoreBinding plan_core_binding(const std::vector<int>& allowed, int online, int local_rank, int local_size) {
  TZ_CHECK(online >= 1 && local_size >= 1 && local_rank >= 0 && local_rank < local_size, "core binding: local rank ",
           local_rank, " of ", local_size, " on ", online, " cores");
  CoreBinding b;
  std::vector<int> mine;
  if (!allowed.empty() && int(allowed.size()) < online) {
    mine = allowed;
    b.source = "the launcher's binding";
  } else {
    const std::vector<int> all = allowed.empty() ? std::vector<int>() : allowed;
    const int n = allowed.empty() ? online : int(all.size());
    auto core = [&](int i) { return all.empty() ? i % online : all[std::size_t(i % n)]; };
    if (local_size <= n) {
      const int slice = n / local_size, extra = n % local_size;
      // The first `extra` ranks get one core more, so every core is used.
      const int start = local_rank * slice + std::min(local_rank, extra);
      for (int i = 0; i < slice + (local_rank < extra ? 1 : 0); ++i) mine.push_back(core(start + i));
      b.source = "local rank " + std::to_string(local_rank) + " of " + std::to_string(local_size) + " on " +
                 std::to_string(n) + " cores";
    } else {
      mine.push_back(core(local_rank));
      b.source = "local rank " + std::to_string(local_rank) + " of " + std::to_string(local_size) +
                 ": more ranks than the " + std::to_string(n) + " cores, so ranks share them";
    }
  }
  if (mine.size() >= 3) {
    b.io = {mine.back()};
    mine.pop_back();
  }
  b.compute = mine;
  return b;
}

void apply_core_binding(const CoreBinding& b) {
  const cpu_set_t s = to_set(b.compute);
  if (sched_setaffinity(0, sizeof s, &s) != 0)
    TZ_FAIL("cannot bind to cores ", cores_text(b.compute), ": ", std::strerror(errno));
  std::lock_guard<std::mutex> lock(g_mu);
  g_io = b.io;
}

void pin_io_thread() noexcept {
  std::vector<int> io;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    io = g_io;
  }
  if (io.empty()) return;
  const cpu_set_t s = to_set(io);
  pthread_setaffinity_np(pthread_self(), sizeof s, &s);  // best effort: a refusal keeps the inherited cores
}

std::string cores_text(const std::vector<int>& cores) {
  std::string s;
  for (std::size_t i = 0; i < cores.size();) {
    std::size_t j = i;
    while (j + 1 < cores.size() && cores[j + 1] == cores[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + std::to_string(cores[i]) + (j > i ? "-" + std::to_string(cores[j]) : "");
    i = j + 1;
  }
  return s;
}

}  // namespace tz
