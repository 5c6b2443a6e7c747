// Blockwise dynamic 8-bit quantization of an optimizer state (Dettmers et al. 2022): a tensor's
// elements, in their flat order, in blocks of 256 (the last may be shorter), each block an fp32 absmax
// (the largest |x| in it) and one code per element, the index of the map value (core/quant_map.h)
// nearest to x / absmax (IEEE division; ties to the smaller magnitude). An all-zero block has absmax 0
// and every code that of 0. Blocks never straddle tensors, so a shard that starts on a block boundary
// holds whole blocks and quantizes alike at every world size.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/quant_map.h"

namespace tz {

inline constexpr std::size_t kQuantBlock = 256;

// Blocks of n elements: ceil(n / 256).
constexpr std::size_t quant_blocks(std::size_t n) { return (n + kQuantBlock - 1) / kQuantBlock; }

// One block of n <= 256 elements: returns its absmax and writes its codes. With `keep_nonzero`, an
// element that is not 0 but whose nearest value is never takes the nearest nonzero one instead: Adam's
// second moment, whose rounding to 0 beside a first moment that did not would make the next update
// m / eps (the drift other 8-bit optimizers have hit on parameters whose gradient turns zero).
float quantize_block(const float* x, std::size_t n, const QuantMap& map, std::uint8_t* codes, bool keep_nonzero = false);

// x[0, n) in blocks: codes[n], absmax[quant_blocks(n)].
void quantize_blockwise(const float* x, std::size_t n, const QuantMap& map, std::uint8_t* codes, float* absmax,
                        bool keep_nonzero = false);

// out[i] = map[codes[i]] * absmax[i / 256].
void dequantize_blockwise(const std::uint8_t* codes, const float* absmax, std::size_t n, const QuantMap& map,
                          float* out);

}  // namespace tz
