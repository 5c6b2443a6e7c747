// route_async_signals: block the asynchronous signals everywhere but in one waiting thread.
#include "launch/signal_routing.h"

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "core/error.h"

namespace tz {
namespace {

sigset_t routed_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGCHLD}) sigaddset(&set, sig);
  return set;
}

}  // namespace

pid_t route_async_signals() {
  const sigset_t set = routed_set();
  int rc = pthread_sigmask(SIG_BLOCK, &set, nullptr);
  TZ_CHECK(rc == 0, "pthread_sigmask failed: ", std::strerror(rc));
  std::atomic<pid_t> tid{0};
  std::thread([&tid, set] {
    // Its own mask lets them in; it only sleeps, so every handler runs here, on its own stack.
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    tid.store(pid_t(::syscall(SYS_gettid)));
    tid.notify_one();
    for (;;) ::pause();
  }).detach();
  tid.wait(0);
  return tid.load();
}

void spawn_with_no_signals_blocked(posix_spawnattr_t& attr) {
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
}

}  // namespace tz
