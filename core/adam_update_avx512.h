// AdamW's vector update and the bf16 rounding of its outputs on AVX-512 lanes (__m512), shared by the units
// built with that ISA's flags (cpu_adam_avx512.cc, adam_compressed_avx512.cc) and included by no other:
// math::adamw_update, operation for operation and operand for operand (the operand order decides which NaN
// comes out when both are NaN). Division stays division and nothing fuses into FMA (-ffp-contract=off on both
// units): a reciprocal or a single rounding would change the bits. Everything here is in an unnamed
// namespace, so each unit has its own copy and the linker never picks one built with wider flags for another
// caller (the hazard cpu_adam_kernels.h describes).
#pragma once

#include <immintrin.h>

#include "core/cpu_adam_kernels.h"

namespace tz::cpu_adam_detail {
namespace {

struct Vec {
  __m512 grad_scale, beta1, one_minus_beta1, beta2, one_minus_beta2, inv_bias2_sqrt, eps, step_size, decay;
};

Vec broadcast(const Consts& k) {
  return {
      _mm512_set1_ps(k.c.grad_scale), _mm512_set1_ps(k.c.beta1),         _mm512_set1_ps(k.one_minus_beta1),
      _mm512_set1_ps(k.c.beta2),      _mm512_set1_ps(k.one_minus_beta2), _mm512_set1_ps(k.c.inv_bias2_sqrt),
      _mm512_set1_ps(k.c.eps),        _mm512_set1_ps(k.c.step_size),     _mm512_set1_ps(k.decay)};
}

inline void update(const Vec& k, __m512& p, __m512& m, __m512& v, __m512 g) {
  g = _mm512_mul_ps(g, k.grad_scale);
  m = _mm512_add_ps(_mm512_mul_ps(k.beta1, m), _mm512_mul_ps(k.one_minus_beta1, g));
  v = _mm512_add_ps(_mm512_mul_ps(k.beta2, v), _mm512_mul_ps(_mm512_mul_ps(k.one_minus_beta2, g), g));
  const __m512 denom = _mm512_add_ps(_mm512_mul_ps(_mm512_sqrt_ps(v), k.inv_bias2_sqrt), k.eps);
  p = _mm512_sub_ps(_mm512_mul_ps(p, k.decay), _mm512_mul_ps(k.step_size, _mm512_div_ps(m, denom)));
}

// float_to_bf16 with integer ops, in 32-bit lanes whose top half is the result: add 0x7fff plus the
// kept lowest bit (ties to even); a NaN keeps its top half with the quiet bit set. (vcvtneps2bf16
// would flush denormals to zero, which float_to_bf16 does not.)
inline __m512i bf16_in_top_half(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  return _mm512_mask_or_epi32(rounded, nan, u, _mm512_set1_epi32(0x00400000));
}

}  // namespace
}  // namespace tz::cpu_adam_detail
