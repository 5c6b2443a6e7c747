// Internal to core/adam_compressed*.cc: the per-ISA kernels of the compressed-state AdamW, one
// translation unit each with that ISA's flags (core/CMakeLists.txt). As in cpu_adam_kernels.h, only
// declarations and plain data here: an ISA unit calls no inline function of a header (an out-of-line copy
// built with -mavx512f could be the one the linker keeps for every caller).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/code_buckets.h"
#include "core/cpu_adam_kernels.h"
#include "core/dtype.h"
#include "core/elementwise.h"

namespace tz::adam_compressed_detail {

// Everything a kernel needs for one step, derived once in adam_compressed.cc (no contraction) with the
// float operations math::adamw_update performs, and the tables of the two 8-bit maps.
struct Consts {
  cpu_adam_detail::Consts adam;  // the update's, as the fp32 CPU Adam derives them
  const float* signed_map;    // dynamic_map(true): m's values, 256
  const float* unsigned_map;  // dynamic_map(false): v's
  CodeBuckets signed_buckets;  // code_buckets(true): m's nearest codes
  CodeBuckets unsigned_buckets;
  std::uint8_t signed_zero, unsigned_zero;  // the code of 0 in each map
  // counter_bits(seed, step, e) = finalize(sr_base ^ (e + kSrElementAdd) * kSrElementMul): the part that
  // does not depend on the element, computed once.
  std::uint64_t sr_base;
};

inline constexpr std::uint64_t kSrElementAdd = 0x8CB92BA72F3D8DD7ull;
inline constexpr std::uint64_t kSrElementMul = 0x94D049BB133111EBull;
inline constexpr std::uint64_t kSrMix1 = 0xBF58476D1CE4E5B9ull;
inline constexpr std::uint64_t kSrMix2 = 0x94D049BB133111EBull;

enum class Master { fp32, bf16_sr };

// n elements from the shard's element `element` (int8: a multiple of 256, and n whole blocks but the last);
// p is float* or bf16* by `master`; absmax arrays hold this range's blocks.
using Int8Kernel = void (*)(const Consts& k, void* p, const float* g, std::size_t n, std::uint8_t* m, float* m_absmax,
                            std::uint8_t* v, float* v_absmax, std::uint64_t element, Master master);
using Bf16Kernel = void (*)(const Consts& k, void* p, const float* g, std::size_t n, bf16* m, bf16* v,
                            std::uint64_t element, Master master);

void int8_avx512(const Consts& k, void* p, const float* g, std::size_t n, std::uint8_t* m, float* m_absmax,
                 std::uint8_t* v, float* v_absmax, std::uint64_t element, Master master);
void bf16_avx512(const Consts& k, void* p, const float* g, std::size_t n, bf16* m, bf16* v, std::uint64_t element,
                 Master master);
void int8_avx2(const Consts& k, void* p, const float* g, std::size_t n, std::uint8_t* m, float* m_absmax,
               std::uint8_t* v, float* v_absmax, std::uint64_t element, Master master);
void bf16_avx2(const Consts& k, void* p, const float* g, std::size_t n, bf16* m, bf16* v, std::uint64_t element,
               Master master);

}  // namespace tz::adam_compressed_detail
