// Device discovery that never throws: GPU tests use it to decide whether to skip.
#include "core/cuda/cuda_runtime.h"

#include <string>

namespace tz::cuda {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later probes start clean
    return 0;
  }
  return n;
}

std::string unavailable_reason() {
  int n = 0;
  cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess) {
    cudaGetLastError();
    return std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(rc) + " (" + cudaGetErrorString(rc) + ")";
  }
  if (n == 0) return "no CUDA device";
  return "";
}

}  // namespace tz::cuda
