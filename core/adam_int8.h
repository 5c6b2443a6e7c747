// AdamW on compressed states (int8 or bf16 moments), one quantization block at a time (scalar: the definition the vector
// paths and tests/core/adam_int8_reference.py match): the block's moments are dequantized, each element
// updated in fp32 exactly as math::adamw_update does, and the moments quantized again with the block's
// new absmax (core/blockwise_quant.h; m on the signed map, v on the unsigned one, a nonzero v never
// rounded to 0). An element whose
// gradient is NaN or inf is not updated: its parameter keeps its value and its moments their
// dequantized values (which the block's new absmax may then round to a neighbouring code).
// With a bf16 master, the updated fp32 value is rounded stochastically (core/stochastic_round.h) with
// the bits of (seed, step, the element's index in its tensor).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "core/elementwise.h"

namespace tz {

struct Int8Moments {
  std::uint8_t* m;  // codes, n
  float* m_absmax;  // this block's
  std::uint8_t* v;
  float* v_absmax;
};

// n <= 256 elements of one block, fp32 master p.
void adamw_int8_block(const math::AdamCoeffs& c, float* p, const float* g, std::size_t n, Int8Moments s);

// The same with a bf16 master; `element` is the block's first element's index in its tensor.
struct SrKey {
  std::uint64_t seed, step, element;
};
void adamw_int8_block_bf16(const math::AdamCoeffs& c, bf16* p, const float* g, std::size_t n, Int8Moments s, SrKey key);

// bf16 moments, the other compressed format: each element's m and v read as floats, updated as above (a
// non-finite gradient element leaves p, m and v as they were, bits included), and written back rounded to
// nearest even (float_to_bf16). No block structure: n is any count.
struct Bf16Moments {
  bf16* m;
  bf16* v;
};
void adamw_bf16m_block(const math::AdamCoeffs& c, float* p, const float* g, std::size_t n, Bf16Moments s);
void adamw_bf16m_block_bf16(const math::AdamCoeffs& c, bf16* p, const float* g, std::size_t n, Bf16Moments s,
                            SrKey key);

}  // namespace tz
