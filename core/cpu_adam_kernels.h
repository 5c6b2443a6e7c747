// Internal to core/cpu_adam*.cc: the per-ISA kernels cpu_adam.cc dispatches to, one translation
// unit each, built with that ISA's flags (see core/CMakeLists.txt).
#pragma once

// Only declarations and constants here: a header inline function used from a -mavx512f unit could be
// emitted out of line with AVX-512 instructions and picked by the linker for every caller (one
// definition rule), so the ISA units call only intrinsics and functions of their own, never an inline
// function from a header (including core/ headers for their types is harmless: unused inline code is
// not emitted). core/adam_update_avx512.h and _avx2.h, whose functions have internal linkage and are
// included only by the units of their ISA, are the exception.
#include <cstddef>
#include <cstdint>

#include "core/elementwise.h"

namespace tz {
struct AdamStep;
}

namespace tz::cpu_adam_detail {

// The step streams four arrays from memory. The hardware prefetchers alone leave it ~15% short of
// the access-pattern limit: while a core waits on its dividers (a sqrt and two divisions per element)
// they fall behind. An explicit prefetch 2 KiB (32 lines) ahead in each stream keeps enough misses in
// flight to bring it within a few percent (1 and 2 KiB measured alike, 0.5 and 4 KiB 1-2% slower;
// 2 threads, 100M params). The limit pass prefetches the same way.
inline constexpr std::uintptr_t kPrefetchBytes = 2048;

// How the working copy is stored. It is written once and not read back by this step, so streaming
// (non-temporal) stores skip reading its lines into the cache first (2 B instead of 4 B of traffic
// per param with bf16) and keep it from evicting the arrays still in use: measured 4-5% faster than
// cached stores for the bf16 step. They need aligned addresses; kernels fall back to cached stores.
enum class Store { cached, streaming };

enum class WorkingOut { none, f32, bf16, f16 };

// Everything a kernel needs for one step. The derived constants are computed once, in cpu_adam.cc
// (baseline flags, no contraction), with the same float operations math::adamw_update performs.
struct Consts {
  math::AdamCoeffs c;     // as given to math::adamw_update (the scalar kernel uses it directly)
  float one_minus_beta1;  // 1.0f - beta1
  float one_minus_beta2;  // 1.0f - beta2
  float decay;            // 1.0f - lr * weight_decay
};

// The step's constants (cpu_adam.cc).
Consts consts_for(const AdamStep& s);

// One chunk: n elements from the pointers given; `working` points at this chunk's first element.
using AdamKernel = void (*)(const Consts& k, float* p, float* m, float* v, const float* g, std::size_t n,
                            void* working, WorkingOut out);
// Reads p, g, m, v and stores p, m, v unchanged, and writes a working copy of p's bits when asked (the
// full word, or its top 16 bits, with the step's stores): the access pattern with no arithmetic.
using MemoryPassKernel = void (*)(float* p, float* m, float* v, const float* g, std::size_t n, void* working,
                                  WorkingOut out);

void adamw_scalar(const Consts& k, float* p, float* m, float* v, const float* g, std::size_t n, void* working,
                  WorkingOut out);
void memory_pass_scalar(float* p, float* m, float* v, const float* g, std::size_t n, void* working,
                        WorkingOut out);

void adamw_avx2(const Consts& k, float* p, float* m, float* v, const float* g, std::size_t n, void* working,
                WorkingOut out);
void memory_pass_avx2(float* p, float* m, float* v, const float* g, std::size_t n, void* working,
                        WorkingOut out);

void adamw_avx512(const Consts& k, float* p, float* m, float* v, const float* g, std::size_t n, void* working,
                  WorkingOut out);
void memory_pass_avx512(float* p, float* m, float* v, const float* g, std::size_t n, void* working,
                        WorkingOut out);

}  // namespace tz::cpu_adam_detail
