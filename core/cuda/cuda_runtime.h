// The CUDA runtime seen from host code: device count (0 on any failure, e.g. no driver) and the
// TZ_CUDA_CHECK member of the check family. Include only from code in CUDA targets.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "core/error.h"

#define TZ_CUDA_CHECK(call)                                                                            \
  do {                                                                                                 \
    cudaError_t tz_cuda_rc_ = (call);                                                                  \
    TZ_CHECK_GEN("CUDA call failed", tz_cuda_rc_ == cudaSuccess, #call, cudaGetErrorName(tz_cuda_rc_), \
                 ": ", cudaGetErrorString(tz_cuda_rc_));                                               \
  } while (0)

namespace tz::cuda {

// Number of usable GPUs; 0 when cudaGetDeviceCount fails for any reason (no device, no driver).
int device_count();

// Why no device is usable, for test skips and error messages ("" when one is).
std::string unavailable_reason();

}  // namespace tz::cuda
