// Reads rank and world size from the launcher's environment, Open MPI first, then Slurm.
#include "comm/world.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "core/error.h"

namespace tz {
namespace {

int read_int(const std::function<const char*(const char*)>& getenv, const char* name, int fallback) {
  const char* v = getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  TZ_CHECK(end && *end == '\0' && x >= 0, "environment variable ", name, "='", v, "' is not a non-negative integer");
  return int(x);
}

}  // namespace

WorldInfo discover_world(const std::function<const char*(const char*)>& getenv) {
  WorldInfo w;
  if (getenv("OMPI_COMM_WORLD_SIZE")) {
    w.source = "openmpi";
    w.rank = read_int(getenv, "OMPI_COMM_WORLD_RANK", 0);
    w.size = read_int(getenv, "OMPI_COMM_WORLD_SIZE", 1);
    w.local_rank = read_int(getenv, "OMPI_COMM_WORLD_LOCAL_RANK", 0);
    w.local_size = read_int(getenv, "OMPI_COMM_WORLD_LOCAL_SIZE", 1);
  } else if (getenv("SLURM_NTASKS") && getenv("SLURM_PROCID")) {
    w.source = "slurm";
    w.rank = read_int(getenv, "SLURM_PROCID", 0);
    w.size = read_int(getenv, "SLURM_NTASKS", 1);
    w.local_rank = read_int(getenv, "SLURM_LOCALID", 0);
    // SLURM_NTASKS_PER_NODE may be "2(x3)"; strtol-style parsing takes the leading count.
    const char* per = getenv("SLURM_NTASKS_PER_NODE");
    w.local_size = per ? std::max(1, std::atoi(per)) : 1;
  }
  TZ_CHECK(w.size >= 1 && w.rank < w.size, "inconsistent world from ", w.source, ": rank ", w.rank, " of ", w.size);
  TZ_CHECK(w.local_rank < std::max(w.local_size, w.local_rank + 1), "bad local rank");
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) w.host = host;
  return w;
}

WorldInfo discover_world() {
  return discover_world([](const char* n) { return std::getenv(n); });
}

}  // namespace tz
