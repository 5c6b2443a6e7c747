// Tests the cpu backend's vector ops: cast between every pair of fp32/bf16/fp16 against the double
// reference rounding, and fill, axpy, add, sum, sum_squares, check_finite against scalar references.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/backend.h"
#include "core/error.h"
#include "tests/common/compare.h"
#include "tests/common/random.h"
#include "tests/common/reference_rounding.h"
#include "tests/common/stream.h"

namespace tz {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr DType kFloatTypes[] = {DType::f32, DType::bf16, DType::f16};

// Raw storage for n elements of a float type; value(i) decodes with the reference definitions.
struct Raw {
  DType type;
  std::vector<std::uint8_t> bytes;
  Raw(DType t, std::size_t n) : type(t), bytes(n * dtype_size(t)) {}
  std::size_t size() const { return bytes.size() / dtype_size(type); }
  double value(std::size_t i) const {
    if (type == DType::f32) {
      float f;
      std::memcpy(&f, &bytes[4 * i], 4);
      return f;
    }
    std::uint16_t b;
    std::memcpy(&b, &bytes[2 * i], 2);
    return type == DType::bf16 ? test::bf16_value(b) : test::fp16_value(b);
  }
};

// Source values: for the 16-bit types every bit pattern; for fp32 random bit patterns (all
// exponents, NaN, Inf), random values in fp16's range, exact fp16/bf16 midpoints and specials.
Raw cast_source(DType t) {
  if (t != DType::f32) {
    Raw r(t, 65536);
    for (std::uint32_t b = 0; b < 65536; ++b) std::memcpy(&r.bytes[2 * b], &b, 2);
    return r;
  }
  test::Rng rng(80);
  std::vector<float> v;
  for (int i = 0; i < 100000; ++i) v.push_back(bits_float(rng.bits32()));
  for (int i = 0; i < 100000; ++i)
    v.push_back(float(rng.uniform(-70000, 70000) * std::pow(2.0, -rng.below(40))));
  for (double mid :
       {1 + std::ldexp(1.0, -11), 1 + 3 * std::ldexp(1.0, -11), 1 + std::ldexp(1.0, -8),
        1 + 3 * std::ldexp(1.0, -8), std::ldexp(1.0, -25), 3 * std::ldexp(1.0, -25), 65520.0, 65504.0})
    v.insert(v.end(), {float(mid), -float(mid)});
  v.insert(v.end(),
           {0.0f, -0.0f, kInf, -kInf, kNaN, -kNaN, std::numeric_limits<float>::max(),
            std::numeric_limits<float>::denorm_min(), bits_float(0x7f800001u), bits_float(0xffffffffu)});
  Raw r(DType::f32, v.size());
  std::memcpy(r.bytes.data(), v.data(), r.bytes.size());
  return r;
}

double round_to(DType t, double x) {
  switch (t) {
    case DType::bf16:
      return test::round_to(test::kBf16, x);
    case DType::f16:
      return test::round_to(test::kFp16, x);
    default:
      return double(float(x));  // the sources are all exact in fp32
  }
}

TEST(Cast, EveryPairOfFloatTypesRoundsToNearestEvenAndKeepsNaNInfAndSignedZero) {
  auto be = make_cpu_backend();
  for (DType st : kFloatTypes) {
    const Raw src = cast_source(st);
    for (DType dt : kFloatTypes) {
      SCOPED_TRACE(testing::Message() << dtype_name(st) << " -> " << dtype_name(dt));
      Raw dst(dt, src.size());
      be->cast(test::cpu_stream(), dst.bytes.data(), dt, src.bytes.data(), st, src.size());
      std::size_t bad = 0;
      for (std::size_t i = 0; i < src.size(); ++i) {
        const double x = src.value(i), want = round_to(dt, x), got = dst.value(i);
        const bool ok = std::isnan(x) ? std::isnan(got) && std::signbit(got) == std::signbit(x)
                                      : got == want && std::signbit(got) == std::signbit(want);
        if (!ok && bad++ == 0)
          ADD_FAILURE() << "element " << i << ": cast(" << x << ") = " << got << ", want " << want;
      }
      EXPECT_EQ(bad, 0u) << "mismatches of " << src.size();
    }
  }
}

TEST(Cast, SameTypeCastsCopyEveryNonNaNPatternBitwise) {
  auto be = make_cpu_backend();
  for (DType t : {DType::bf16, DType::f16}) {
    const Raw src = cast_source(t);
    Raw dst(t, src.size());
    be->cast(test::cpu_stream(), dst.bytes.data(), t, src.bytes.data(), t, src.size());
    for (std::size_t i = 0; i < src.size(); ++i)
      if (!std::isnan(src.value(i)))
        ASSERT_EQ(std::memcmp(&src.bytes[2 * i], &dst.bytes[2 * i], 2), 0)
            << dtype_name(t) << " element " << i;
  }
}

TEST(Cast, IntegerTypesAreRejected) {
  auto be = make_cpu_backend();
  std::vector<float> f(4);
  std::vector<std::int32_t> i(4);
  EXPECT_THROW(be->cast(test::cpu_stream(), i.data(), DType::i32, f.data(), DType::f32, 4), Error);
  EXPECT_THROW(be->cast(test::cpu_stream(), f.data(), DType::f32, i.data(), DType::i32, 4), Error);
}

TEST(Fill, WritesTheValueToEveryElementAndNoFurther) {
  auto be = make_cpu_backend();
  for (float value : {0.0f, -0.0f, 3.25f, kNaN}) {
    std::vector<float> x(1003 + 1, 7.0f);
    be->fill(test::cpu_stream(), x.data(), value, 1003);
    for (std::size_t i = 0; i < 1003; ++i)
      ASSERT_EQ(std::memcmp(&x[i], &value, 4), 0) << "value " << value << " element " << i;
    EXPECT_EQ(x[1003], 7.0f);  // one past the end is untouched
  }
}

TEST(Axpy, AddsAlphaTimesXToY) {
  auto be = make_cpu_backend();
  test::Rng rng(81);
  const std::size_t n = 1003;
  const std::vector<float> x = rng.floats(n, -10, 10), y0 = rng.floats(n, -10, 10);
  for (float alpha : {0.37f, -2.5f, 0.0f}) {
    std::vector<float> y = y0;
    be->axpy(test::cpu_stream(), y.data(), alpha, x.data(), n);
    // One multiply and one add (or one fused multiply-add): within 2^-23 (|y| + |alpha x|).
    std::vector<double> want(n), tol(n);
    for (std::size_t i = 0; i < n; ++i) {
      want[i] = double(y0[i]) + double(alpha) * x[i];
      tol[i] = std::ldexp(std::fabs(y0[i]) + std::fabs(double(alpha) * x[i]), -23);
    }
    EXPECT_TRUE(test::all_within("y", y, want, tol)) << "alpha " << alpha;
  }
}

TEST(Add, IsTheCorrectlyRoundedSum) {
  auto be = make_cpu_backend();
  test::Rng rng(82);
  const std::size_t n = 1003;
  std::vector<float> a = rng.floats(n, -1e3, 1e3), b = rng.floats(n, -1, 1);
  b[5] = -a[5];              // exact cancellation
  b[6] = a[6] * 1e-9f;       // far smaller addend
  a[7] = kInf, b[7] = 1.0f;  // Inf propagates
  std::vector<float> out(n, kNaN);
  be->add(test::cpu_stream(), out.data(), a.data(), b.data(), n);
  // Rounding the exact double sum to float is the correctly rounded fp32 sum (53 >= 2*24 + 2).
  std::vector<float> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = float(double(a[i]) + double(b[i]));
  EXPECT_TRUE(test::all_bits_equal("out", reinterpret_cast<const std::uint32_t*>(out.data()),
                                   reinterpret_cast<const std::uint32_t*>(want.data()), n));
}

// The reductions write into a double accumulator (device memory in training; a host double here).
double reduce(Backend& be, void (Backend::*op)(Stream&, double*, const float*, std::size_t), const float* x,
              std::size_t n, double start = 0) {
  double acc = start;
  (be.*op)(test::cpu_stream(), &acc, x, n);
  return acc;
}

TEST(SumSquares, AccumulatesInDoubleBeyondTheFloatRange) {
  auto be = make_cpu_backend();
  test::Rng rng(83);
  const std::size_t n = 100003;
  std::vector<float> x = rng.floats(n, -3, 3);
  x[17] = 1e30f;  // its square, 1e60, overflows fp32: only a double accumulator keeps it
  double want = 0, size = 0;
  for (float v : x) want += double(v) * double(v);
  for (float v : x) size += double(v) * double(v);
  const double got = reduce(*be, &Backend::sum_squares, x.data(), n);
  // Any order of n double additions of non-negative terms: within n * 2^-53 of the total.
  EXPECT_NEAR(got, want, double(n) * std::ldexp(size, -53));
  EXPECT_EQ(reduce(*be, &Backend::sum_squares, x.data(), 0), 0.0);
  const std::vector<float> small = {3.0f, -4.0f};
  EXPECT_EQ(reduce(*be, &Backend::sum_squares, small.data(), 2), 25.0);
  EXPECT_EQ(reduce(*be, &Backend::sum_squares, small.data(), 2, 0.5), 25.5);  // it adds to the accumulator
}

TEST(Sum, AddsTheSumInDoubleToTheAccumulatorIndependentlyOfTheThreadCount) {
  auto be = make_cpu_backend();
  test::Rng rng(85);
  const std::size_t n = 300007;  // several 64 Ki chunks and a remainder
  std::vector<float> x = rng.floats(n, -2, 2);
  double want = 0, size = 0;
  for (float v : x) want += double(v), size += std::fabs(double(v));
  const double got = reduce(*be, &Backend::sum, x.data(), n, 1.0);
  EXPECT_NEAR(got, 1.0 + want, double(n) * std::ldexp(size, -53));
  // Fixed chunks added in chunk order: the same bits with 1 and 2 threads.
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const double one = reduce(*be, &Backend::sum, x.data(), n);
  omp_set_num_threads(2);
  const double two = reduce(*be, &Backend::sum, x.data(), n);
  omp_set_num_threads(threads);
  EXPECT_EQ(one, two);
}

TEST(CheckFinite, SetsTheAccumulatorToNaNForANaNOrInfAnywhereAndLeavesFiniteDataAlone) {
  auto be = make_cpu_backend();
  test::Rng rng(84);
  const std::size_t n = 1003;
  std::vector<float> x = rng.floats(n, -1e3, 1e3);
  x[1] = std::numeric_limits<float>::max();
  x[2] = -std::numeric_limits<float>::max();
  x[3] = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(reduce(*be, &Backend::check_finite, x.data(), n, 7.0), 7.0);
  EXPECT_EQ(reduce(*be, &Backend::check_finite, x.data(), 0, 7.0), 7.0);
  for (float bad : {kNaN, -kNaN, kInf, -kInf}) {
    for (std::size_t at : {std::size_t(0), std::size_t(500), n - 1}) {
      std::vector<float> y = x;
      y[at] = bad;
      EXPECT_TRUE(std::isnan(reduce(*be, &Backend::check_finite, y.data(), n, 7.0))) << bad << " at " << at;
      EXPECT_EQ(reduce(*be, &Backend::check_finite, y.data(), at, 7.0), 7.0) << "looked past n=" << at;
    }
  }
}

}  // namespace
}  // namespace tz
