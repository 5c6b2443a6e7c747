// Blockwise quantization, scalar: the definition every vector path and the numpy reference match.
#include "core/blockwise_quant.h"

#include <algorithm>
#include <cmath>

namespace tz {

float quantize_block(const float* x, std::size_t n, const QuantMap& map, std::uint8_t* codes, bool keep_nonzero) {
  float absmax = 0.0f;
  for (std::size_t i = 0; i < n; ++i) absmax = std::max(absmax, std::fabs(x[i]));
  const std::uint8_t zero = nearest_code(map, 0.0f);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint8_t c = absmax > 0.0f ? nearest_code(map, x[i] / absmax) : zero;
    // The map's values around 0 are its neighbours in code order.
    if (keep_nonzero && c == zero && x[i] != 0.0f) c = x[i] > 0.0f ? std::uint8_t(zero + 1) : std::uint8_t(zero - 1);
    codes[i] = c;
  }
  return absmax;
}

void quantize_blockwise(const float* x, std::size_t n, const QuantMap& map, std::uint8_t* codes, float* absmax,
                        bool keep_nonzero) {
  for (std::size_t b = 0, at = 0; at < n; ++b, at += kQuantBlock)
    absmax[b] = quantize_block(x + at, std::min(kQuantBlock, n - at), map, codes + at, keep_nonzero);
}

void dequantize_blockwise(const std::uint8_t* codes, const float* absmax, std::size_t n, const QuantMap& map,
                          float* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = map[codes[i]] * absmax[i / kQuantBlock];
}

}  // namespace tz
