// The bucket tables of the two dynamic maps, built from their code thresholds, and the scalar look-up.
#include "core/code_buckets.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/quant_map.h"

namespace tz {
namespace {

constexpr std::uint32_t kFirstBinade = 0x34000000u;  // 2^-23's bits
constexpr std::uint32_t kOne = 0x3f800000u;

float from_bits(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

std::uint32_t to_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

// The magnitudes' bits [lo, hi] of positive bucket j (bucket 0 from 0, the top one to 1.0 alone).
struct Range {
  std::uint32_t lo, hi;
};

Range magnitudes(const CodeBuckets& b, std::uint32_t j) {
  const std::uint32_t lo = j == 0 ? 0 : (b.first + j) << b.shift;
  return {lo, std::min(((b.first + j + 1) << b.shift) - 1, kOne)};
}

// The entry of the bucket holding the values [lo, hi]; `low` gives a threshold's low bits as the look-up
// compares them. Throws if two thresholds fall in it, or one in a bucket whose low bits do not order it.
template <typename Low>
std::uint32_t entry(const QuantMap& map, const QuantThresholds& t, float lo, float hi, bool ordered, Low low,
                    std::uint32_t none) {
  std::uint32_t threshold = none;
  int inside = 0;
  for (std::size_t k = 1; k < t.size(); ++k)
    if (lo < t[k] && t[k] <= hi) threshold = low(t[k]), ++inside;
  TZ_CHECK(inside <= (ordered ? 1 : 0), "a code bucket [", lo, ", ", hi, "] holds ", inside, " thresholds");
  return std::uint32_t(nearest_code(map, lo)) << 24 | threshold;
}

// The table and its plain view (the view's entry points into the vector, whose buffer a move keeps).
struct Built {
  std::vector<std::uint32_t> entry;
  CodeBuckets view;
};

Built build(bool is_signed) {
  Built built;
  CodeBuckets& b = built.view;
  std::vector<std::uint32_t>& out = built.entry;
  b.shift = is_signed ? 17 : 16;
  b.first = kFirstBinade >> b.shift;
  b.top = (kOne >> b.shift) - b.first;
  b.neg_base = b.top + 1;
  b.neg_mask = is_signed ? ~0u : 0u;
  const QuantMap& map = dynamic_map(is_signed);
  const QuantThresholds& t = code_thresholds(is_signed);
  const std::uint32_t mask = (1u << b.shift) - 1, none = 1u << b.shift;
  const auto pos_low = [&](float x) { return to_bits(x) & mask; };
  const auto neg_low = [&](float x) { return mask - (to_bits(-x) & mask); };
  for (std::uint32_t j = 0; j <= b.top; ++j) {
    const Range r = magnitudes(b, j);
    out.push_back(entry(map, t, from_bits(r.lo), from_bits(r.hi), j > 0, pos_low, none));
  }
  if (!is_signed) {
    out.push_back(entry(map, t, -1.0f, -0.0f, false, neg_low, none));
  } else {
    for (std::uint32_t j = 0; j <= b.top; ++j) {
      const Range r = magnitudes(b, j);
      out.push_back(entry(map, t, -from_bits(r.hi), -from_bits(r.lo), j > 0, neg_low, none));
    }
  }
  b.entry = out.data();
  b.entries = out.size();
  return built;
}

}  // namespace

const CodeBuckets& code_buckets(bool is_signed) {
  static const Built s = build(true), u = build(false);
  return is_signed ? s.view : u.view;
}

std::uint8_t bucket_code(const CodeBuckets& b, float x) {
  const std::uint32_t u = to_bits(x), a = u & 0x7fffffffu, mask = (1u << b.shift) - 1;
  const bool negative = u >> 31;
  const std::uint32_t j = std::uint32_t(std::clamp(int(a >> b.shift) - int(b.first), 0, int(b.top)));
  const std::uint32_t e = b.entry[negative ? b.neg_base + (j & b.neg_mask) : j];
  const std::uint32_t low = negative ? mask - (a & mask) : a & mask;
  return std::uint8_t((e >> 24) + (low >= (e & 0xffffffu)));
}

}  // namespace tz
