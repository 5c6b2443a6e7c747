// Reference bf16/fp16 arithmetic written independently of core/dtype.h (double, frexp/ldexp and
// nearbyint instead of bit tricks), so tests can check dtype.h's conversions against it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace tz::test {

// A binary format: p significand bits (with the implicit one), emin the smallest normal
// exponent, emax the largest.
struct Format {
  int p, emin, emax;
};
inline constexpr Format kFp16{11, -14, 15};
inline constexpr Format kBf16{8, -126, 127};

// Rounds a finite double to the nearest value of `f` (ties to even, via nearbyint in the default
// rounding mode), with gradual underflow and overflow to +-Inf. Infinities and NaN pass through.
inline double round_to(Format f, double x) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e;
  std::frexp(x, &e);  // |x| = m 2^e with m in [0.5, 1): the leading bit is 2^(e-1)
  const int exp = std::max(e - 1, f.emin);
  const double ulp = std::ldexp(1.0, exp - (f.p - 1));
  const double r = std::nearbyint(x / ulp) * ulp;  // x / ulp is exact: ulp is a power of two
  const double max_finite = std::ldexp(2.0 - std::ldexp(1.0, 1 - f.p), f.emax);
  if (std::fabs(r) > max_finite) return std::copysign(std::numeric_limits<double>::infinity(), x);
  return r;
}

// The value of an IEEE half bit pattern: sign, 5 exponent bits (bias 15), 10 fraction bits (a NaN
// keeps its sign; its payload is not modelled).
inline double fp16_value(std::uint16_t bits) {
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  const int exp = (bits >> 10) & 0x1f;
  const int man = bits & 0x3ff;
  if (exp == 0x1f)
    return man ? std::copysign(std::numeric_limits<double>::quiet_NaN(), sign) : sign * HUGE_VAL;
  if (exp == 0) return sign * std::ldexp(double(man), -24);
  return sign * std::ldexp(double(1024 + man), exp - 25);
}

// The value of a bfloat16 bit pattern: sign, 8 exponent bits (bias 127), 7 fraction bits.
inline double bf16_value(std::uint16_t bits) {
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  const int exp = (bits >> 7) & 0xff;
  const int man = bits & 0x7f;
  if (exp == 0xff)
    return man ? std::copysign(std::numeric_limits<double>::quiet_NaN(), sign) : sign * HUGE_VAL;
  if (exp == 0) return sign * std::ldexp(double(man), -133);
  return sign * std::ldexp(double(128 + man), exp - 134);
}

}  // namespace tz::test
