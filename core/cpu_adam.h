// CPU Adam: AdamW over fp32 master params and moments with the fused write of the working copy (fp32,
// bf16 or fp16), vectorised for AVX-512 and AVX2 behind one runtime dispatch, parallel over chunks.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/backend.h"
#include "core/dtype.h"
#include "core/elementwise.h"

namespace tz {

// Instruction-set paths. Every path gives the same bits as math::adamw_update (see cpu_adam.cc).
enum class CpuAdamIsa { scalar, avx2, avx512 };

std::string_view cpu_adam_isa_name(CpuAdamIsa isa);

// Whether this CPU can run the path: avx512 needs avx512f/bw/vl/dq, avx2 needs avx2/fma/f16c.
bool cpu_adam_isa_supported(CpuAdamIsa isa);

// The path to use given a requested name (null or empty: the widest supported path). Throws tz::Error
// naming `source` (where the name came from) for an unknown name or a path this CPU cannot run.
// Pure, so tests can call it.
CpuAdamIsa select_cpu_adam_isa(const char* requested, std::string_view source = "TZ_CPU_ADAM_ISA");

// The path cpu_adamw uses, chosen once at first use (TZ_CPU_ADAM_ISA=avx512|avx2|scalar overrides).
CpuAdamIsa cpu_adam_isa_choice();
std::string cpu_adam_isa();

// Per-step coefficients exactly as the core CPU backend derives them (bias corrections in double,
// rounded once to float), so cpu_adamw and a reference loop over math::adamw_update agree bit for bit.
math::AdamCoeffs adam_coeffs(const AdamStep& s);

// One AdamW step over n elements, in place on p, m, v; g is read only. When `working` is not null
// the updated params are also written there as working_type (f32, bf16 or f16, rounded to nearest
// even as from_float). Runs on the calling thread's OpenMP team over fixed-size chunks.
void cpu_adamw(float* p, float* m, float* v, const float* g, std::size_t n, const AdamStep& s, void* working,
               DType working_type);

// The same on an explicit path (tests compare every supported path; the benchmark picks one).
void cpu_adamw_with(CpuAdamIsa isa, float* p, float* m, float* v, const float* g, std::size_t n,
                    const AdamStep& s, void* working, DType working_type);

// The benchmark's limit: Adam's memory traffic with no arithmetic, on the same chunks, threads, vector
// width and store kinds as cpu_adamw_with(isa, ...): reads p, g, m, v, writes p, m, v back unchanged,
// and writes the working copy's bytes (p's bits, or their top 16 bits) when `working` is not null.
void cpu_adam_memory_pass(CpuAdamIsa isa, float* p, float* m, float* v, const float* g, std::size_t n,
                          void* working = nullptr, DType working_type = DType::f32);

}  // namespace tz
