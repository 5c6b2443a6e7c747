// MPI_Get_library_version may be called before MPI_Init (MPI-3.0, 8.1.1).
#include "comm/mpi_info.h"

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

namespace tz {

std::string mpi_library_version() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int n = 0;
  if (MPI_Get_library_version(v, &n) != MPI_SUCCESS) return "unknown";
  std::string s(v, std::size_t(n > 0 ? n : 0));
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string mpi_cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return "yes";
#elif defined(MPIX_CUDA_AWARE_SUPPORT)
  return "no";
#else
  return "unknown";
#endif
}

}  // namespace tz
