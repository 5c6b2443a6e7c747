// Timeout probe (2 ranks, run by ctest through tests/common/expect_exit.sh): rank 1 stops taking part
// while rank 0 has collectives in flight; rank 0 must report ONE error, naming the stuck collective,
// about one timeout after it was called (not one timeout per collective in flight), and end the job.
//   comm_timeout_probe           rank 0 waits on the stuck all_reduce, catches the error, prints it and
//                                aborts the job with code 3
//   comm_timeout_probe unwaited  rank 0's main thread is stuck outside comm (it sleeps), so the
//                                communicator's watchdog must log the error and abort with code 1
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/mpi_comm.h"
#include "comm/world.h"
#include "core/error.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kShard = 256;

// A training step's shape at ZeRO stage 3: parameters gathered ahead (prefetched) and a gradient
// all_reduce. Collectives #1-#3 are gathers both ranks take part in; rank 1 then stops, so rank 0's
// all_reduce #4 and its prefetches #5-#7 never complete. Unwinding destroys the unfinished prefetches,
// which must return at once and quietly.
void step(tz::Communicator& comm, bool waited) {
  const int n = comm.size();
  std::vector<float> shard(kShard, float(comm.rank() + 1)), grads(1024, 1.0f);
  static std::vector<float> gathered(7 * kShard * 2);  // MPI may write it after the failure
  std::vector<std::unique_ptr<tz::Work>> prefetched;
  for (int i = 0; i < 3; ++i)
    prefetched.push_back(comm.all_gather(shard.data(), &gathered[i * kShard * n], kShard, tz::DType::f32));
  if (comm.rank() == 1) {
    for (auto& w : prefetched) w->wait();  // leaves its communicator idle, so a direct MPI call is allowed
    // Stuck in a different call (a receive nobody sends), as a rank blocked elsewhere would be; only
    // rank 0's abort ends it.
    int never = 0;
    MPI_Recv(&never, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    std::fprintf(stderr, "timeout_probe: rank 1's receive returned, which it never should\n");
    comm.abort(1);
  }
  auto reduce = comm.all_reduce(grads.data(), grads.size(), tz::DType::f32);  // #4
  for (int i = 3; i < 6; ++i)
    prefetched.push_back(comm.all_gather(shard.data(), &gathered[i * kShard * n], kShard, tz::DType::f32));
  if (!waited) {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // stuck outside comm
  }
  reduce->wait();
}

}  // namespace

int main(int argc, char** argv) {
  auto comm = tz::make_mpi_world();
  tz::set_log_context(tz::LogContext{comm->rank(), comm->size(), tz::discover_world().host, "cpu"});
  const bool waited = !(argc > 1 && std::string(argv[1]) == "unwaited");
  if (comm->size() != 2) {
    std::fprintf(stderr, "timeout_probe runs at exactly 2 ranks, not %d\n", comm->size());
    comm->abort(2);
  }
  comm->set_timeout(std::chrono::seconds(2));
  const auto t0 = Clock::now();
  try {
    step(*comm, waited);
    std::fprintf(stderr, "timeout_probe: the all_reduce completed without rank 1, which it never should\n");
    comm->abort(1);
  } catch (const tz::Error& e) {
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    std::fprintf(stderr, "timeout_probe: rank 0 caught after %.2f s: %s\n", s, e.what());
    std::fprintf(stderr, "timeout_probe: aborting the job with code 3\n");
    comm->abort(3);
  }
}
