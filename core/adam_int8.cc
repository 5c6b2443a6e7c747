// The compressed-moment AdamW block updates (int8, bf16), scalar.
#include "core/adam_int8.h"

#include <cmath>

#include "core/blockwise_quant.h"
#include "core/stochastic_round.h"

namespace tz {
namespace {

// Dequantizes the block's moments into m and v, updates p (as floats) where g is finite, requantizes.
template <typename Load, typename Store>
void update(const math::AdamCoeffs& c, const float* g, std::size_t n, Int8Moments s, Load load, Store store) {
  const QuantMap& sm = dynamic_map(true);
  const QuantMap& um = dynamic_map(false);
  float m[kQuantBlock], v[kQuantBlock];
  for (std::size_t i = 0; i < n; ++i) {
    m[i] = sm[s.m[i]] * *s.m_absmax;
    v[i] = um[s.v[i]] * *s.v_absmax;
    if (!std::isfinite(g[i])) continue;
    float p = load(i);
    math::adamw_update(p, m[i], v[i], g[i], c);
    store(i, p);
  }
  *s.m_absmax = quantize_block(m, n, sm, s.m);
  *s.v_absmax = quantize_block(v, n, um, s.v, /*keep_nonzero=*/true);
}

// bf16 moments: element by element, nothing written where g is not finite.
template <typename Load, typename Store>
void update_bf16m(const math::AdamCoeffs& c, const float* g, std::size_t n, Bf16Moments s, Load load, Store store) {
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(g[i])) continue;
    float p = load(i), m = bf16_to_float(s.m[i]), v = bf16_to_float(s.v[i]);
    math::adamw_update(p, m, v, g[i], c);
    s.m[i] = float_to_bf16(m);
    s.v[i] = float_to_bf16(v);
    store(i, p);
  }
}

}  // namespace

void adamw_bf16m_block(const math::AdamCoeffs& c, float* p, const float* g, std::size_t n, Bf16Moments s) {
  update_bf16m(c, g, n, s, [p](std::size_t i) { return p[i]; }, [p](std::size_t i, float x) { p[i] = x; });
}

void adamw_bf16m_block_bf16(const math::AdamCoeffs& c, bf16* p, const float* g, std::size_t n, Bf16Moments s,
                            SrKey key) {
  update_bf16m(c, g, n, s, [p](std::size_t i) { return bf16_to_float(p[i]); },
               [p, key](std::size_t i, float x) {
                 p[i] = float_to_bf16_sr(x, counter_bits(key.seed, key.step, key.element + i));
               });
}

void adamw_int8_block(const math::AdamCoeffs& c, float* p, const float* g, std::size_t n, Int8Moments s) {
  update(c, g, n, s, [p](std::size_t i) { return p[i]; }, [p](std::size_t i, float x) { p[i] = x; });
}

void adamw_int8_block_bf16(const math::AdamCoeffs& c, bf16* p, const float* g, std::size_t n, Int8Moments s,
                           SrKey key) {
  update(c, g, n, s, [p](std::size_t i) { return bf16_to_float(p[i]); },
         [p, key](std::size_t i, float x) {
           p[i] = float_to_bf16_sr(x, counter_bits(key.seed, key.step, key.element + i));
         });
}

}  // namespace tz
