// route_async_signals: with signals sent while every other thread computes, each handler runs on the
// routing thread (without the routing, they run on the computing threads, where oneDNN's JIT gemms may
// hold rsp in the heap); a spawned child's mask is empty. Each scenario runs in a forked child, so the
// mask and the handler stay out of the test process.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "launch/signal_routing.h"

extern char** environ;

namespace tz {
namespace {

constexpr int kSlots = 4096;
std::atomic<int> g_handled{0};
pid_t g_tids[kSlots];

extern "C" void record_tid(int) {
  const int i = g_handled.fetch_add(1);
  if (i < kSlots) g_tids[i] = pid_t(::syscall(SYS_gettid));
}

// Runs `fn` in a forked child and returns what it wrote to its stdout pipe (the child exits 0).
template <class Fn>
std::string in_child(Fn fn) {
  int fd[2];
  EXPECT_EQ(::pipe(fd), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fd[0]);
    const std::string out = fn();
    const ssize_t n = ::write(fd[1], out.data(), out.size());
    ::_exit(n == ssize_t(out.size()) ? 0 : 3);
  }
  ::close(fd[1]);
  std::string out;
  char b[512];
  for (ssize_t n; (n = ::read(fd[0], b, sizeof b)) > 0;) out.append(b, std::size_t(n));
  ::close(fd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  return out;
}

// 200 SIGUSR1s, 0.5 ms apart, while the calling thread and two threads it starts compute; returns
// "HANDLED ON_ROUTE ON_COMPUTE": handlers run, and how many ran on `route` and on a computing thread.
std::string signals_during_compute(pid_t route) {
  struct sigaction sa {};
  sa.sa_handler = record_tid;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, nullptr);
  std::atomic<bool> done{false};
  pid_t computing[3] = {0, 0, 0};
  auto compute = [&done, &computing](int who) {
    computing[who] = pid_t(::syscall(SYS_gettid));
    volatile double x = 1;
    while (!done.load(std::memory_order_relaxed)) x = std::sqrt(x + 1.0);
  };
  std::vector<std::thread> workers;
  for (int i = 1; i <= 2; ++i) workers.emplace_back(compute, i);
  std::thread sender([&done] {
    for (int i = 0; i < 200; ++i) {
      ::kill(::getpid(), SIGUSR1);
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the last ones handled
    done = true;
  });
  compute(0);
  sender.join();
  for (auto& w : workers) w.join();
  const int n = std::min(g_handled.load(), kSlots);
  int on_route = 0, on_compute = 0;
  for (int i = 0; i < n; ++i) {
    on_route += g_tids[i] == route;
    for (pid_t c : computing) on_compute += g_tids[i] == c;
  }
  return std::to_string(n) + " " + std::to_string(on_route) + " " + std::to_string(on_compute);
}

TEST(SignalRouting, EveryHandlerRunsOnTheRoutingThreadWhileTheOtherThreadsCompute) {
  const std::string out = in_child([] { return signals_during_compute(route_async_signals()); });
  int handled = -1, on_route = -1, on_compute = -1;
  ASSERT_EQ(std::sscanf(out.c_str(), "%d %d %d", &handled, &on_route, &on_compute), 3) << out;
  EXPECT_GE(handled, 1);  // pending signals of one kind merge: at least one, at most 200
  EXPECT_LE(handled, 200);
  EXPECT_EQ(on_route, handled);
  EXPECT_EQ(on_compute, 0) << on_compute << " of " << handled << " handlers ran on a computing thread";
}

// The hazard the routing removes, so that the test above can fail: unrouted, the kernel hands a
// process-directed signal to a thread that computes (the main thread first).
TEST(SignalRouting, WithoutTheRoutingHandlersRunOnTheComputingThreads) {
  const std::string out = in_child([] { return signals_during_compute(-1); });
  int handled = -1, on_route = -1, on_compute = -1;
  ASSERT_EQ(std::sscanf(out.c_str(), "%d %d %d", &handled, &on_route, &on_compute), 3) << out;
  EXPECT_GE(handled, 1);
  EXPECT_EQ(on_compute, handled);
}

// A child spawned with the attributes has nothing blocked; without them it inherits the routed mask.
std::string spawned_sigblk(bool attributes) {
  route_async_signals();
  int fd[2];
  if (::pipe(fd) != 0) return "pipe failed";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
  posix_spawnattr_t attr;
  spawn_with_no_signals_blocked(attr);
  std::string a0 = "cat", a1 = "/proc/self/status";  // cat, not a shell: dash resets its mask
  char* argv[] = {a0.data(), a1.data(), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, "/bin/cat", &fa, attributes ? &attr : nullptr, argv, environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fd[1]);
  if (rc != 0) return "spawn failed";
  std::string out;
  char b[256];
  for (ssize_t n; (n = ::read(fd[0], b, sizeof b)) > 0;) out.append(b, std::size_t(n));
  int status = 0;
  ::waitpid(pid, &status, 0);
  const std::size_t at = out.find("SigBlk:");
  return at == std::string::npos ? out : out.substr(at, out.find('\n', at) + 1 - at);
}

TEST(SignalRouting, ASpawnedChildBlocksNoSignal) {
  EXPECT_EQ(in_child([] { return spawned_sigblk(true); }), "SigBlk:\t0000000000000000\n");
  // SIGHUP (1), SIGINT (2), SIGQUIT (3), SIGUSR1 (10), SIGUSR2 (12), SIGALRM (14), SIGTERM (15), SIGCHLD (17)
  EXPECT_EQ(in_child([] { return spawned_sigblk(false); }), "SigBlk:\t0000000000016a07\n");
}

}  // namespace
}  // namespace tz
