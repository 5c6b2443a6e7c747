// The MPI library seen without initialising MPI: its version string and whether it was built
// CUDA-aware (Open MPI's MPIX_CUDA_AWARE_SUPPORT), for `tierzero doctor`.
#pragma once

#include <string>

namespace tz {

std::string mpi_library_version();
// "yes", "no", or "unknown" (an MPI without Open MPI's extension header).
std::string mpi_cuda_aware();

}  // namespace tz
