// Core binding of a rank's threads (`tierzero train --bind-cores auto`): the cores its compute threads
// (the main thread, OpenMP, the CPU Adam) run on, and the cores its I/O threads (the MPI progress
// thread, the NVMe engine) run on. launch/ decides them once; the threads that start later pin
// themselves with pin_io_thread().
#pragma once

#include <string>
#include <vector>

namespace tz {

struct CoreBinding {
  std::vector<int> compute, io;  // empty io: the I/O threads share the compute cores
  std::string source;            // how the cores were chosen, for the log line
};

// The cores this process may run on (sched_getaffinity).
std::vector<int> allowed_cores();

// Splits the rank's cores: `allowed` when the launcher bound the process to fewer than `online` cores,
// else the local_rank-th of local_size equal slices of the online cores (cores shared round-robin when
// ranks outnumber them). With 3 or more cores, the last is for I/O and the rest for compute.
CoreBinding plan_core_binding(const std::vector<int>& allowed, int online, int local_rank, int local_size);

// Pins the calling thread (the main thread: compute) to b.compute and records b.io for pin_io_thread().
// Throws naming the cores when the kernel refuses.
void apply_core_binding(const CoreBinding& b);

// Called at the start of an I/O thread: pins it to the recorded I/O cores, if any (no-op otherwise).
void pin_io_thread() noexcept;

std::string cores_text(const std::vector<int>& cores);  // "0-3,8"

}  // namespace tz
