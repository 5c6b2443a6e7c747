// Timeout probe (run at 2 ranks by ctest): rank 1 never joins an all_reduce, so rank 0's wait must
// throw the communicator's timeout error, which it prints before aborting the job with code 3.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <vector>

#include "comm/mpi_comm.h"
#include "comm/world.h"
#include "core/error.h"

int main() {
  auto comm = tz::make_mpi_world();
  tz::set_log_context(tz::LogContext{comm->rank(), comm->size(), tz::discover_world().host, "cpu"});
  if (comm->size() != 2) {
    std::fprintf(stderr, "timeout_probe runs at exactly 2 ranks, not %d\n", comm->size());
    comm->abort(2);
  }
  if (comm->rank() == 1) {
    // Stuck in a different call (a receive nobody sends), as a rank blocked elsewhere would be; only
    // rank 0's abort ends it.
    int never = 0;
    MPI_Recv(&never, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    std::fprintf(stderr, "timeout_probe: rank 1's receive returned, which it never should\n");
    comm->abort(1);
  }
  comm->set_timeout(std::chrono::seconds(2));
  std::vector<float> grads(1024, 1.0f);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    comm->all_reduce(grads.data(), grads.size(), tz::DType::f32)->wait();
    std::fprintf(stderr, "timeout_probe: the all_reduce completed without rank 1, which it never should\n");
    comm->abort(1);
  } catch (const tz::Error& e) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "timeout_probe: rank 0 caught after %.2f s: %s\n", s, e.what());
    std::fprintf(stderr, "timeout_probe: aborting the job with code 3\n");
    comm->abort(3);
  }
}
