// The CUDA backend: Backend's table on the GPU (cuBLASLt products, the kernels of core/cuda/kernels.h,
// cudaMemcpyAsync copies and cudaMemsetAsync fills), each enqueued on a CudaStream.
#pragma once

#include <memory>

#include "core/allocator.h"
#include "core/backend.h"
#include "core/cuda/cuda_device.h"

namespace tz::cuda {

// Takes cuBLASLt's workspace from `device_memory` (which must outlive the backend). The current GPU must
// be the device's.
std::unique_ptr<Backend> make_cuda_backend(Allocator& device_memory, const CudaOptions& options);

}  // namespace tz::cuda
