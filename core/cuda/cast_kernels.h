// Conversion kernels on device memory, using the same dtype.h rounding as the CPU backend.
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

#include "core/dtype.h"

namespace tz::cuda {

void cast_f32_to_bf16(bf16* dst, const float* src, std::size_t n, cudaStream_t stream);
void cast_f32_to_fp16(fp16* dst, const float* src, std::size_t n, cudaStream_t stream);
void cast_bf16_to_f32(float* dst, const bf16* src, std::size_t n, cudaStream_t stream);

}  // namespace tz::cuda
