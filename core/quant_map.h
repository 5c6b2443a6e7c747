// The 8-bit dynamic quantization maps of blockwise 8-bit Adam (Dettmers et al. 2022), built as
// bitsandbytes' create_dynamic_map builds them (max_exponent_bits 7, total_bits 8): for each decimal
// exponent e = -6..0, the midpoints of linspace(0.1, 1, k) scaled by 10^e, with k = 2^(e+6) + 1 for the
// signed map (and their negatives) or 2^(e+7) + 1 for the unsigned one; then 0 and 1, sorted. Each
// value is computed in float64 and rounded once to float32, so the map does not depend on a library's
// float32 linspace: it is within 2 ulp of bitsandbytes' under torch 1.13 (which differs in 90 and 99
// values), and tests/core/quant_map_test.cc pins both. The signed map serves Adam's first moment (from
// -0.99297 to 1), the unsigned one its second (from 0 to 1).
#pragma once

#include <array>
#include <cstdint>

namespace tz {

using QuantMap = std::array<float, 256>;

// The map, ascending; built once.
const QuantMap& dynamic_map(bool is_signed);

// The code of the map value nearest to x (x is a value already divided by its block's absmax, in
// [-1, 1]). A tie between two neighbouring values goes to the one of smaller magnitude, so the
// rounding never grows a moment. NaN gives the code of 0.
std::uint8_t nearest_code(const QuantMap& map, float x);

// The same function as 255 thresholds, for vector code: t[k] (k = 1..255) is the smallest float x with
// nearest_code(map, x) >= k, and t[0] = -inf; then for every x that is not NaN, nearest_code(map, x) is
// the largest k with t[k] <= x, with no distances and no tie rule left to evaluate (core/code_buckets.h
// turns them into the vector kernels' one look-up). nearest_code is monotone in x (x - lo grows and hi - x
// shrinks as x grows, rounded or not), so each threshold is found by bisecting the floats between two
// neighbouring map values; built once.
using QuantThresholds = std::array<float, 256>;
const QuantThresholds& code_thresholds(bool is_signed);

}  // namespace tz
