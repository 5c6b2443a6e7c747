// The CUDA device: cudaMalloc'd device memory, page-aligned host memory locked with cudaHostRegister
// (pinned) and page-aligned pageable memory, each under its budget; CUDA streams and events; the
// cuBLASLt + kernel backend.
// Reached through make_device (core/make_device.cc); tests may make one directly.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "core/device.h"

namespace tz::cuda {

// Whether fp32 products may round their inputs to TF32 (CUBLAS_COMPUTE_32F_FAST_TF32). Off by default,
// so fp32 results stay comparable with the CPU backend's.
enum class Tf32 { off, on };

// The fused attention: fp32 (the default: within ~1e-6 of the cpu backend), bf16 tiles on tensor cores for
// head sizes up to 128 (larger heads keep fp32), or cudnn: cuDNN's fused flash attention for bf16 and fp16
// activations with head sizes that are multiples of 8 up to 128 (core/cuda/cudnn_attention.h), and what bf16
// does for everything cuDNN does not run.
enum class Attention { fp32, bf16, cudnn };

// What Attention::cudnn does where cuDNN should run a shape but cannot (the library missing, a graph it
// refuses, a workspace over the scratch): log one line and run the bf16 kernels for that shape (training
// never stops for cuDNN), or throw the reason (tests that must see cuDNN run).
enum class CudnnFallback { bf16_kernels, refuse };

struct CudaOptions {
  Tf32 tf32 = Tf32::off;
  Attention attention = Attention::fp32;
  CudnnFallback cudnn_fallback = CudnnFallback::bf16_kernels;
  // The cuDNN library Attention::cudnn loads at its first use: "" is libcudnn.so.9, found as the loader
  // finds libraries (tests name one that does not exist to see the fallback).
  std::string cudnn_library;
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
