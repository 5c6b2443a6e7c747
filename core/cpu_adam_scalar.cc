// CPU Adam's portable path: math::adamw_update itself, element by element, for CPUs without AVX2.
// It is the arithmetic the vector paths reproduce bit for bit.
#include <emmintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/dtype.h"
#include "core/elementwise.h"
#include "core/cpu_adam_kernels.h"

namespace tz::cpu_adam_detail {
namespace {

template <typename W>
void run(const math::AdamCoeffs& c, float* p, float* m, float* v, const float* g, std::size_t n, W* out) {
  for (std::size_t i = 0; i < n; ++i) {
    math::adamw_update(p[i], m[i], v[i], g[i], c);
    if constexpr (!std::is_void_v<W>) out[i] = from_float<W>(p[i]);
  }
}

}  // namespace

void adamw_scalar(const Consts& k, float* p, float* m, float* v, const float* g, std::size_t n, void* working,
                  WorkingOut out) {
  switch (out) {
    case WorkingOut::none:
      run(k.c, p, m, v, g, n, static_cast<void*>(nullptr));
      break;
    case WorkingOut::f32:
      run(k.c, p, m, v, g, n, static_cast<float*>(working));
      break;
    case WorkingOut::bf16:
      run(k.c, p, m, v, g, n, static_cast<bf16*>(working));
      break;
    case WorkingOut::f16:
      run(k.c, p, m, v, g, n, static_cast<fp16*>(working));
      break;
  }
}

void memory_pass_scalar(float* p, float* m, float* v, const float* g, std::size_t n, void* working,
                        WorkingOut out) {
  // Four at a time with SSE2 (part of x86-64): GCC vectorises the Adam loop above with SSE2, so a
  // one-float-at-a-time limit would be slower than the step it bounds.
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m128 a = _mm_loadu_ps(p + i), b = _mm_loadu_ps(m + i), c = _mm_loadu_ps(v + i);
    const __m128 d = _mm_loadu_ps(g + i);
    // An empty asm that "may change" a, b, c and "uses" d: the compiler must load all four and store
    // three, and can neither drop the stores of unchanged values nor the unused load of g.
    asm volatile("" : "+x"(a), "+x"(b), "+x"(c) : "x"(d));
    _mm_storeu_ps(p + i, a);
    _mm_storeu_ps(m + i, b);
    _mm_storeu_ps(v + i, c);
  }
  for (; i < n; ++i) {
    float a = p[i], b = m[i], c = v[i];
    const float d = g[i];
    asm volatile("" : "+x"(a), "+x"(b), "+x"(c) : "x"(d));
    p[i] = a;
    m[i] = b;
    v[i] = c;
  }
  // The working copy's bytes: p itself, or its top 16 bits.
  if (out == WorkingOut::f32) {
    for (std::size_t j = 0; j < n; ++j) static_cast<float*>(working)[j] = p[j];
  } else if (out != WorkingOut::none) {
    for (std::size_t j = 0; j < n; ++j) {
      std::uint32_t bits;
      __builtin_memcpy(&bits, p + j, 4);
      static_cast<std::uint16_t*>(working)[j] = std::uint16_t(bits >> 16);
    }
  }
}

}  // namespace tz::cpu_adam_detail
