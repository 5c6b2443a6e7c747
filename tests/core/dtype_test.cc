// Tests core/dtype.h: bf16/fp16 <-> float conversions round to nearest even, keep Inf/NaN, and agree
// with an independent double-arithmetic reference (tests/common/reference_rounding.h).
#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tests/common/compare.h"
#include "tests/common/random.h"
#include "tests/common/reference_rounding.h"

namespace tz {
namespace {

using test::all_bits_equal;

constexpr float kInf = std::numeric_limits<float>::infinity();

std::uint16_t fp16_bits(float f) { return float_to_fp16(f).bits; }
std::uint16_t bf16_bits(float f) { return float_to_bf16(f).bits; }
float f32(double d) {
  float f = float(d);
  EXPECT_EQ(double(f), d) << "test input " << d << " is not exact in float";
  return f;
}

TEST(Fp16, ToFloatMatchesTheFormatDefinitionForEveryPattern) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const float got = fp16_to_float(fp16{std::uint16_t(b)});
    const double want = test::fp16_value(std::uint16_t(b));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << "pattern 0x" << std::hex << b;
    } else {
      ASSERT_EQ(double(got), want) << "pattern 0x" << std::hex << b;
    }
    ASSERT_EQ(std::signbit(got), bool(b & 0x8000)) << "pattern 0x" << std::hex << b;
  }
}

TEST(Fp16, EveryPatternRoundTripsThroughFloatBitwiseAndNaNsStayNaN) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const std::uint16_t back = float_to_fp16(fp16_to_float(fp16{std::uint16_t(b)})).bits;
    const bool is_nan = (b & 0x7c00) == 0x7c00 && (b & 0x3ff);
    if (is_nan) {
      ASSERT_EQ(back & 0x7c00, 0x7c00) << "NaN 0x" << std::hex << b << " became 0x" << back;
      ASSERT_NE(back & 0x3ff, 0) << "NaN 0x" << std::hex << b << " became Inf";
      ASSERT_EQ(back & 0x8000, b & 0x8000) << "NaN 0x" << std::hex << b << " lost its sign";
    } else {
      ASSERT_EQ(back, b) << "pattern 0x" << std::hex << b << " came back as 0x" << back;
    }
  }
}

// For every pair of neighbouring finite fp16 values (subnormals included) the exact midpoint, which
// float represents exactly (12 significant bits), must round to the neighbour with an even last
// bit, and the floats just either side of it to the nearer neighbour.
TEST(Fp16, EveryMidpointBetweenNeighboursRoundsToTheEvenOne) {
  std::vector<std::uint16_t> got, want;
  for (std::uint16_t lo = 0; lo < 0x7bff; ++lo) {
    const std::uint16_t hi = lo + 1;
    const float mid = f32((test::fp16_value(lo) + test::fp16_value(hi)) / 2);
    const std::uint16_t even = (lo & 1) ? hi : lo;
    got.insert(got.end(), {fp16_bits(mid), fp16_bits(-mid), fp16_bits(std::nextafter(mid, 0.0f)),
                           fp16_bits(std::nextafter(mid, kInf))});
    want.insert(want.end(), {even, std::uint16_t(even | 0x8000), lo, hi});
  }
  EXPECT_TRUE(
      all_bits_equal("fp16 of midpoints (mid, -mid, below, above)", got.data(), want.data(), got.size()));
}

TEST(Fp16, SubnormalMidpointsRoundToEven) {
  const double unit = std::ldexp(1.0, -24);        // the smallest subnormal
  EXPECT_EQ(fp16_bits(f32(0.5 * unit)), 0x0000);   // between 0 and 1 unit: 0 is even
  EXPECT_EQ(fp16_bits(f32(-0.5 * unit)), 0x8000);  // and keeps the sign of zero
  EXPECT_EQ(fp16_bits(std::nextafter(f32(0.5 * unit), 1.0f)), 0x0001);
  EXPECT_EQ(fp16_bits(f32(1.5 * unit)), 0x0002);
  EXPECT_EQ(fp16_bits(f32(2.5 * unit)), 0x0002);
  EXPECT_EQ(fp16_bits(f32(3.5 * unit)), 0x0004);
  EXPECT_EQ(fp16_bits(f32(1022.5 * unit)), 0x03fe);
  EXPECT_EQ(fp16_bits(f32(1023.5 * unit)), 0x0400);     // largest subnormal -> smallest normal
  EXPECT_EQ(fp16_bits(std::ldexp(1.0f, -30)), 0x0000);  // far below: flushes to zero
}

TEST(Fp16, NormalTiesRoundToEven) {
  EXPECT_EQ(fp16_bits(f32(1.0 + std::ldexp(1.0, -11))), 0x3c00);
  EXPECT_EQ(fp16_bits(f32(1.0 + 3 * std::ldexp(1.0, -11))), 0x3c02);
  EXPECT_EQ(fp16_bits(f32(2048.0 + 1.0)), 0x6800);  // 2048 and 2050 are neighbours
  EXPECT_EQ(fp16_bits(f32(2048.0 + 3.0)), 0x6802);
  EXPECT_EQ(fp16_bits(f32(65488.0)), 0x7bfe);  // between 65472 (even) and 65504
}

TEST(Fp16, OverflowsToInfinityFrom65520) {
  EXPECT_EQ(fp16_bits(65504.0f), 0x7bff);
  EXPECT_EQ(fp16_bits(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(fp16_bits(65520.0f), 0x7c00);  // the tie between 65504 (odd) and 2^16 goes up: Inf
  EXPECT_EQ(fp16_bits(-65520.0f), 0xfc00);
  EXPECT_EQ(fp16_bits(-std::nextafter(65520.0f, 0.0f)), 0xfbff);
  EXPECT_EQ(fp16_bits(1e6f), 0x7c00);
  EXPECT_EQ(fp16_bits(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_EQ(fp16_bits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(fp16_bits(-std::numeric_limits<float>::infinity()), 0xfc00);
}

TEST(Fp16, NaNStaysNaNAndKeepsItsSign) {
  // 0x7f800001 has its payload only in bits a plain shift would drop, which would make it Inf.
  for (std::uint32_t u :
       {0x7f800001u, 0x7f801fffu, 0x7fc00000u, 0x7fffffffu, 0xff800001u, 0xffc00000u, 0xffffffffu}) {
    const std::uint16_t h = fp16_bits(bits_float(u));
    EXPECT_EQ(h & 0x7c00, 0x7c00) << std::hex << u;
    EXPECT_NE(h & 0x3ff, 0) << std::hex << u << " became Inf";
    EXPECT_EQ(bool(h & 0x8000), bool(u & 0x80000000u)) << std::hex << u;
  }
}

// Checks float_to_fp16 against round_to(kFp16, x) on n floats drawn by `draw`, comparing values
// (and the sign of zero); NaN inputs must give NaN.
template <typename Draw>
void expect_fp16_matches_reference(std::size_t n, Draw draw) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float x = bits_float(draw());
    const std::uint16_t h = fp16_bits(x);
    const double got = test::fp16_value(h);
    const double want = test::round_to(test::kFp16, double(x));
    const bool ok =
        std::isnan(want) ? std::isnan(got) : (got == want && std::signbit(got) == std::signbit(want));
    if (!ok && bad++ == 0)
      ADD_FAILURE() << "float_to_fp16(" << x << " = 0x" << std::hex << float_bits(x) << ") = 0x" << h << " ("
                    << got << "), reference " << want;
  }
  EXPECT_EQ(bad, 0u) << "mismatches out of " << n;
}

TEST(Fp16, MatchesADoubleReferenceOnMillionsOfRandomFloats) {
  test::Rng rng(20240601);
  // Uniform bit patterns cover every exponent, NaN and Inf included.
  expect_fp16_matches_reference(2'000'000, [&] { return rng.bits32(); });
  // Most of those over- or underflow, so also draw exponents around fp16's range [2^-26, 2^17).
  expect_fp16_matches_reference(4'000'000, [&] {
    const std::uint32_t u = rng.bits32();
    const std::uint32_t exp = 101 + (u >> 23) % 43;
    return (u & 0x807fffffu) | (exp << 23);
  });
}

TEST(Bf16, RoundsTiesToEven) {
  EXPECT_EQ(bf16_bits(f32(1.0 + std::ldexp(1.0, -8))), 0x3f80);
  EXPECT_EQ(bf16_bits(f32(1.0 + 3 * std::ldexp(1.0, -8))), 0x3f82);
  EXPECT_EQ(bf16_bits(f32(-(1.0 + 3 * std::ldexp(1.0, -8)))), 0xbf82);
  EXPECT_EQ(bf16_bits(std::nextafter(f32(1.0 + std::ldexp(1.0, -8)), 2.0f)), 0x3f81);
}

// Same as the fp16 case: the midpoint of neighbouring bf16 values has 9 significant bits, exact in
// float (for bf16 subnormals too: they are float subnormals with zero low halves).
TEST(Bf16, EveryMidpointBetweenNeighboursRoundsToTheEvenOne) {
  std::vector<std::uint16_t> got, want;
  for (std::uint16_t lo = 0; lo < 0x7f7f; ++lo) {
    const std::uint16_t hi = lo + 1;
    const float mid = f32((test::bf16_value(lo) + test::bf16_value(hi)) / 2);
    const std::uint16_t even = (lo & 1) ? hi : lo;
    got.insert(got.end(), {bf16_bits(mid), bf16_bits(-mid), bf16_bits(std::nextafter(mid, 0.0f)),
                           bf16_bits(std::nextafter(mid, kInf))});
    want.insert(want.end(), {even, std::uint16_t(even | 0x8000), lo, hi});
  }
  EXPECT_TRUE(
      all_bits_equal("bf16 of midpoints (mid, -mid, below, above)", got.data(), want.data(), got.size()));
}

TEST(Bf16, OverflowsToInfinityOnlyPastTheLargestValue) {
  EXPECT_EQ(bf16_bits(bits_float(0x7f7f0000u)), 0x7f7f);
  EXPECT_EQ(bf16_bits(bits_float(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(bf16_bits(bits_float(0x7f7f8000u)), 0x7f80);  // tie with odd 0x7f7f: rounds up to Inf
  EXPECT_EQ(bf16_bits(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(bf16_bits(-std::numeric_limits<float>::max()), 0xff80);
}

TEST(Bf16, PreservesInfinities) {
  EXPECT_EQ(bf16_bits(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(bf16_bits(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_TRUE(std::isinf(bf16_to_float(bf16{0x7f80})));
  EXPECT_EQ(bf16_to_float(bf16{0xff80}), -std::numeric_limits<float>::infinity());
}

TEST(Bf16, NaNStaysNaNAndKeepsItsSign) {
  // Rounding the bits of 0x7f800001 would give Inf, and of 0xffffffff would carry into zero.
  std::vector<std::uint32_t> nans = {0x7f800001u, 0x7f807fffu, 0x7f808000u, 0x7fc00000u,
                                     0x7fffffffu, 0xff800001u, 0xffc00000u, 0xffffffffu};
  test::Rng rng(7);
  for (int i = 0; i < 100000; ++i) {
    std::uint32_t u = 0x7f800000u | (rng.bits32() & 0x807fffffu);
    if ((u & 0x7fffffu) == 0) u |= 1;
    nans.push_back(u);
  }
  for (std::uint32_t u : nans) {
    const std::uint16_t b = bf16_bits(bits_float(u));
    ASSERT_EQ(b & 0x7f80, 0x7f80) << std::hex << u << " -> " << b;
    ASSERT_NE(b & 0x7f, 0) << std::hex << u << " became Inf";
    ASSERT_EQ(bool(b & 0x8000), bool(u & 0x80000000u)) << std::hex << u << " lost its sign";
  }
}

TEST(Bf16, EveryPatternRoundTripsThroughFloatAndNaNsStayNaN) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const float f = bf16_to_float(bf16{std::uint16_t(b)});
    const double want = test::bf16_value(std::uint16_t(b));
    const std::uint16_t back = float_to_bf16(f).bits;
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(f));
      ASSERT_TRUE((back & 0x7f80) == 0x7f80 && (back & 0x7f))
          << "NaN 0x" << std::hex << b << " -> 0x" << back;
      ASSERT_EQ(back & 0x8000, b & 0x8000) << "NaN 0x" << std::hex << b << " lost its sign";
    } else {
      ASSERT_EQ(double(f), want) << "pattern 0x" << std::hex << b;
      ASSERT_EQ(back, b) << "pattern 0x" << std::hex << b << " came back as 0x" << back;
    }
  }
}

TEST(Bf16, MatchesADoubleReferenceOnMillionsOfRandomFloats) {
  test::Rng rng(99);
  std::size_t bad = 0;
  const std::size_t n = 4'000'000;
  for (std::size_t i = 0; i < n; ++i) {
    const float x = bits_float(rng.bits32());
    const std::uint16_t b = bf16_bits(x);
    const double got = test::bf16_value(b);
    const double want = test::round_to(test::kBf16, double(x));
    const bool ok =
        std::isnan(want) ? std::isnan(got) : (got == want && std::signbit(got) == std::signbit(want));
    if (!ok && bad++ == 0)
      ADD_FAILURE() << "float_to_bf16(" << x << " = 0x" << std::hex << float_bits(x) << ") = 0x" << b << " ("
                    << got << "), reference " << want;
  }
  EXPECT_EQ(bad, 0u) << "mismatches out of " << n;
}

TEST(DType, SizesNamesAndTagsAgree) {
  EXPECT_EQ(dtype_size(DType::f32), 4u);
  EXPECT_EQ(dtype_size(DType::i32), 4u);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::f16), 2u);
  EXPECT_EQ(dtype_size(DType::u16), 2u);
  static_assert(sizeof(bf16) == 2 && sizeof(fp16) == 2);
  EXPECT_EQ(dtype_of<bf16>(), DType::bf16);
  EXPECT_EQ(dtype_of<fp16>(), DType::f16);
  EXPECT_EQ(dtype_of<float>(), DType::f32);
  EXPECT_EQ(dtype_name(DType::bf16), "bf16");
  EXPECT_EQ(dtype_name(DType::f16), "fp16");
  EXPECT_EQ(dtype_name(DType::f32), "fp32");
}

}  // namespace
}  // namespace tz
