// Host math on host memory (the pinned host tier, pageable staging): the few elementwise loops and
// reductions the engine runs on offloaded states itself, so that no device kernel is ever pointed at
// host-tier memory. OpenMP-parallel; the reductions sum fixed-size chunks in chunk order, so their
// results do not depend on the thread count and equal the CPU backend's kernels bit for bit.
#pragma once

#include <cstddef>

#include "core/dtype.h"

namespace tz {

void host_copy(float* dst, const float* src, std::size_t n);
void host_add(float* y, const float* x, std::size_t n);  // y += x
void host_zero(float* x, std::size_t n);
double host_sum(const float* x, std::size_t n);
double host_sum_squares(const float* x, std::size_t n);
bool host_all_finite(const float* x, std::size_t n);
// dst[i] = src[i] rounded to dst_type (f32, bf16 or f16), round to nearest even.
void host_cast(void* dst, DType dst_type, const float* src, std::size_t n);

}  // namespace tz
