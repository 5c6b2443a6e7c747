// The CUDA device: cudaMalloc'd device memory, page-aligned host memory locked with cudaHostRegister
// (pinned) and page-aligned pageable memory, each under its budget; CUDA streams and events; the
// cuBLASLt + kernel backend.
// Reached through make_device (core/make_device.cc); tests may make one directly.
#pragma once

#include <cstddef>
#include <memory>

#include "core/device.h"

namespace tz::cuda {

// Whether fp32 products may round their inputs to TF32 (CUBLAS_COMPUTE_32F_FAST_TF32). Off by default,
// so fp32 results stay comparable with the CPU backend's.
enum class Tf32 { off, on };

// The arithmetic of the fused attention: fp32 (the default: within ~1e-6 of the cpu backend), or bf16
// tiles on tensor cores for head sizes up to 128 (larger heads keep fp32).
enum class Attention { fp32, bf16 };

struct CudaOptions {
  Tf32 tf32 = Tf32::off;
  Attention attention = Attention::fp32;
};

// GPU memory the device budget leaves to others when --device-mem is unlimited: the CUDA context
// (~0.5 GiB on an H100), cuBLAS/cuBLASLt handles and their internal workspaces, NCCL's buffers and
// channels (hundreds of MiB at scale), plus headroom for fragmentation, which grows with the GPU.
inline constexpr std::size_t kGpuReserveFixed = std::size_t(1) << 30;
inline constexpr double kGpuReserveFraction = 0.02;
// The device budget for an unlimited --device-mem: `free` (cudaMemGetInfo when the device is made) less
// the reserve of a GPU of `total` bytes; 0 when the reserve does not fit.
std::size_t default_device_budget(std::size_t free, std::size_t total);

// Makes the cuda device on GPU opt.gpu (see DeviceOptions::gpu). Throws tz::Error when there is no GPU,
// when the budget's reserve does not fit in the GPU's free memory, or when cuBLASLt cannot start.
std::unique_ptr<Device> make_cuda_device(const DeviceOptions& opt, const CudaOptions& cuda = {});

// The CUDA index of the GPU a cuda device runs on (for threads that must cudaSetDevice it); throws when
// `dev` is not a cuda device.
int cuda_device_index(Device& dev);

}  // namespace tz::cuda
