// Conversion kernels on device memory, using the same dtype.h rounding as the CPU backend.
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

#include "core/dtype.h"

namespace tz::cuda {

void cast_f32_to_bf16(bf16* dst, const float* src, std::size_t n, cudaStream_t stream);
void cast_f32_to_fp16(fp16* dst, const float* src, std::size_t n, cudaStream_t stream);
void cast_bf16_to_f32(float* dst, const bf16* src, std::size_t n, cudaStream_t stream);
// Any of f32, bf16, f16 to any of them (the same type: a copy); throws tz::Error naming another type.
void cast_any(void* dst, DType dst_type, const void* src, DType src_type, std::size_t n, cudaStream_t stream);

}  // namespace tz::cuda
