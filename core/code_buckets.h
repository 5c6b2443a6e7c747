// The nearest code of a dynamic map (core/quant_map.h) by one table look-up and one integer compare, for
// the vector quantizers: the float's sign, exponent and top mantissa bits pick a bucket, which holds at most
// one of the map's code thresholds; the bucket's entry is its first code and that threshold's low bits.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tz {

// The floats of [-1, 1] in buckets. |x|'s bits shifted right by `shift`, less the first bucketed binade's
// (2^-23: every threshold of both maps lies above it, the smallest at 1.6e-7), clamped to [0, top], give a
// positive x's bucket; the binades below 2^-23 share bucket 0 with that binade's first bucket. A negative
// x's bucket is neg_base plus the same index and'ed with neg_mask (0 for the unsigned map, whose negative
// floats all take code 0: one bucket). Within a bucket the floats' order is that of their low `shift` bits
// (their complement for negative floats: a larger magnitude is a smaller value), so a threshold is compared
// as an integer.
struct CodeBuckets {
  std::uint32_t shift;  // 17 for the signed map (6 mantissa bits), 16 for the unsigned one (7)
  std::uint32_t first;  // |x|'s bits >> shift of the first bucketed binade's first float
  std::uint32_t top;    // the largest positive index: that of 1.0
  std::uint32_t neg_base, neg_mask;
  // code << 24 | the threshold's low bits (1 << shift where the bucket holds none, so no x reaches it):
  // `entries` of them, built once and never freed. Plain data, so the vector kernels' units may copy it.
  const std::uint32_t* entry;
  std::size_t entries;
};

// Built once from code_thresholds; the build checks that no bucket holds two thresholds (and the merged
// bucket of tiny floats none), and tests/core/code_buckets_test.cc that bucket_code is nearest_code.
const CodeBuckets& code_buckets(bool is_signed);

// nearest_code(map, x) for x in [-1, 1], not NaN: the scalar form of what the vector quantizers compute.
std::uint8_t bucket_code(const CodeBuckets& b, float x);

}  // namespace tz
