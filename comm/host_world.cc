// make_host_world: the host communicator of this process's world. A process started without a launcher
// gets the self communicator, so one rank needs no MPI at run time (no mpirun, orted or MCA components,
// as on a lent GPU machine that has no Open MPI); a launched one gets MPI_COMM_WORLD.
#include "comm/communicator.h"
#include "comm/world.h"

namespace tz {

std::unique_ptr<Communicator> make_host_world(const WorldInfo& world) {
  return world.source == "single" ? make_self_comm() : make_mpi_world();
}

}  // namespace tz
