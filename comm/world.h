// World discovery: rank, world size, local rank and local size from Open MPI (OMPI_COMM_WORLD_*,
// also set under srun --mpi=pmix) or Slurm (SLURM_PROCID, ...), falling back to a single rank.
#pragma once

#include <functional>
#include <string>

namespace tz {

struct WorldInfo {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  std::string source = "single";  // "openmpi", "slurm" or "single"
  std::string host;
};

// Reads the environment through `getenv` (a seam for tests); throws tz::Error on inconsistent values.
WorldInfo discover_world(const std::function<const char*(const char*)>& getenv);
WorldInfo discover_world();

}  // namespace tz
