// AdamW's vector update on AVX2 lanes (__m256), shared by the units built with that ISA's flags
// (cpu_adam_avx2.cc, adam_compressed_avx2.cc) and included by no other: math::adamw_update, operation
// for operation and operand for operand (the operand order decides which NaN comes out when both are
// NaN). Division stays division and nothing fuses into FMA (-ffp-contract=off on both units): a
// reciprocal or a single rounding would change the bits. Everything here is in an unnamed namespace, so
// each unit has its own copy and the linker never picks one built with wider flags for another caller
// (the hazard cpu_adam_kernels.h describes).
#pragma once

#include <immintrin.h>

#include "core/cpu_adam_kernels.h"

namespace tz::cpu_adam_detail {
namespace {

struct Vec {
  __m256 grad_scale, beta1, one_minus_beta1, beta2, one_minus_beta2, inv_bias2_sqrt, eps, step_size, decay;
};

Vec broadcast(const Consts& k) {
  return {
      _mm256_set1_ps(k.c.grad_scale), _mm256_set1_ps(k.c.beta1),         _mm256_set1_ps(k.one_minus_beta1),
      _mm256_set1_ps(k.c.beta2),      _mm256_set1_ps(k.one_minus_beta2), _mm256_set1_ps(k.c.inv_bias2_sqrt),
      _mm256_set1_ps(k.c.eps),        _mm256_set1_ps(k.c.step_size),     _mm256_set1_ps(k.decay)};
}

inline void update(const Vec& k, __m256& p, __m256& m, __m256& v, __m256 g) {
  g = _mm256_mul_ps(g, k.grad_scale);
  m = _mm256_add_ps(_mm256_mul_ps(k.beta1, m), _mm256_mul_ps(k.one_minus_beta1, g));
  v = _mm256_add_ps(_mm256_mul_ps(k.beta2, v), _mm256_mul_ps(_mm256_mul_ps(k.one_minus_beta2, g), g));
  const __m256 denom = _mm256_add_ps(_mm256_mul_ps(_mm256_sqrt_ps(v), k.inv_bias2_sqrt), k.eps);
  p = _mm256_sub_ps(_mm256_mul_ps(p, k.decay), _mm256_mul_ps(k.step_size, _mm256_div_ps(m, denom)));
}

}  // namespace
}  // namespace tz::cpu_adam_detail
