// The bucket look-up of the nearest code (core/code_buckets.h) against nearest_code itself.
#include "core/code_buckets.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/quant_map.h"

namespace tz {
namespace {

float from_bits(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// Checks bucket_code against nearest_code at each x in [-1, 1]; returns the count that differ.
long long wrong_codes(bool is_signed, const std::vector<float>& xs) {
  const QuantMap& m = dynamic_map(is_signed);
  const CodeBuckets& b = code_buckets(is_signed);
  long long wrong = 0;
  for (float x : xs) {
    if (!(x >= -1.0f && x <= 1.0f)) continue;
    const bool ok = bucket_code(b, x) == nearest_code(m, x);
    wrong += !ok;
    if (!ok && wrong < 10) ADD_FAILURE() << (is_signed ? "signed" : "unsigned") << " x " << x;
  }
  return wrong;
}

// The floats within `ulps` of x on either side.
void around(float x, int ulps, std::vector<float>& xs) {
  float lo = x, hi = x;
  xs.push_back(x);
  for (int d = 0; d < ulps; ++d) {
    lo = std::nextafter(lo, -2.0f), hi = std::nextafter(hi, 2.0f);
    xs.push_back(lo), xs.push_back(hi);
  }
}

TEST(CodeBuckets, EveryBucketHoldsAtMostOneThresholdAndTheTablesFitInL1) {
  for (bool s : {true, false}) {
    const CodeBuckets& b = code_buckets(s);  // the build checks the one threshold a bucket
    EXPECT_LE(b.entries * 4, 12u * 1024) << (s ? "signed" : "unsigned");
  }
}

// Every threshold and every bucket edge with 64 floats on either side (a threshold that a bucket misplaced
// would show beside it), the map values, +-0 and +-1.
TEST(CodeBuckets, TheLookUpIsTheNearestCodeAroundEveryThresholdAndBucketEdge) {
  for (bool s : {true, false}) {
    std::vector<float> xs;
    for (float t : code_thresholds(s)) around(t, 64, xs);
    for (float v : dynamic_map(s)) around(v, 64, xs);
    const CodeBuckets& b = code_buckets(s);
    for (std::uint32_t j = 0; j <= b.top + 1; ++j) {
      const float edge = from_bits((b.first + j) << b.shift);
      around(edge, 64, xs), around(-edge, 64, xs);
    }
    for (float x : {0.0f, -0.0f, 1.0f, -1.0f, 1e-30f, -1e-30f, 1e-45f, -1e-45f}) xs.push_back(x);
    EXPECT_EQ(wrong_codes(s, xs), 0) << "of " << xs.size();
  }
}

// Every 1021st float of [-1, 1] by bit pattern (a million of each sign) and 2 million uniform values.
TEST(CodeBuckets, TheLookUpIsTheNearestCodeAcrossMinusOneToOne) {
  for (bool s : {true, false}) {
    std::vector<float> xs;
    for (std::uint32_t u = 0; u <= 0x3f800000u; u += 1021)
      xs.push_back(from_bits(u)), xs.push_back(-from_bits(u));
    std::mt19937 rng(s ? 21 : 22);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (int i = 0; i < 2'000'000; ++i) xs.push_back(uniform(rng));
    EXPECT_EQ(wrong_codes(s, xs), 0) << "of " << xs.size();
  }
}

}  // namespace
}  // namespace tz
