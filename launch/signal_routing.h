// Asynchronous signals reach one thread of the process, which runs nothing else.
//
// oneDNN's JIT sgemm kernels (Debian's libdnnl 2.6; fixed upstream in 3.11.1, oneDNN issue #4845) point rsp
// at a heap workspace while they run, for K above 252. A signal handled on such a thread has its frame
// (registers and the AVX state, 1-3 KiB) pushed below that pointer: over the heap. `tierzero train` handles
// SIGTERM, SIGINT and SIGHUP, so a signal that landed in a matmul corrupted the heap (glibc's "corrupted
// size vs. prev_size", a segfault steps later). Routing the signals to a thread that only waits for them
// keeps every handler off the threads that compute.
#pragma once

#include <spawn.h>
#include <sys/types.h>

namespace tz {

// Blocks SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM and SIGCHLD in the calling thread,
// which every thread it starts later inherits (OpenMP's, MPI's, the I/O engine's), and starts the one
// thread that takes them: their handlers run there, their default actions (ending the process) apply as
// before. Call first thing in main(), before any other thread exists. Returns that thread's id.
pid_t route_async_signals();

// Spawn attributes that give a child process an empty signal mask (the mask above is inherited through
// exec otherwise, and a child would never see a SIGTERM). Destroy with posix_spawnattr_destroy.
void spawn_with_no_signals_blocked(posix_spawnattr_t& attr);

}  // namespace tz
