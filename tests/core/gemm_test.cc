// Tests Backend::gemm (core/onednn_gemm.h on the cpu backend) against a double reference: every
// transpose combination, with and without Accumulate, fp32 and bf16 inputs, odd shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/backend.h"
#include "core/error.h"
#include "core/onednn_gemm.h"
#include "tests/common/compare.h"
#include "tests/common/random.h"
#include "tests/common/typed_params.h"
#include "tests/common/stream.h"

namespace tz {
namespace {

struct Shape {
  int M, N, K;
};
// Not multiples of 16 (blocked kernels' remainders), plus a degenerate 1x1x1 and one aligned shape.
constexpr Shape kShapes[] = {{1, 1, 1}, {7, 13, 37}, {33, 17, 65}, {5, 130, 19}, {64, 48, 32}};
constexpr Trans kTrans[] = {Trans::no, Trans::yes};

const char* name(Trans t) { return t == Trans::yes ? "T" : "N"; }

// Runs one gemm and checks every element of C against sum_k op(A)[m,k] op(B)[k,n] (+ C0) in double,
// where A and B are the inputs after rounding to `dtype`. Tolerance: any fp32 summation order of K
// products (exact for bf16 inputs: 8x8-bit products fit in fp32) plus the accumulate add is within
// (K + 1) * 2^-24 * (sum_k |a||b| + |C0|); we allow K + 2 units.
void check_gemm(Backend& be, Shape s, Trans ta, Trans tb, DType dtype, Accumulate acc, test::Rng& rng) {
  SCOPED_TRACE(testing::Message() << "M=" << s.M << " N=" << s.N << " K=" << s.K << " op=" << name(ta)
                                  << name(tb) << " " << dtype_name(dtype)
                                  << (acc == Accumulate::yes ? " accumulate" : ""));
  const int M = s.M, N = s.N, K = s.K;
  test::TypedParams A(rng.floats(std::size_t(M) * K), dtype), B(rng.floats(std::size_t(K) * N), dtype);
  std::vector<float> C0 = rng.floats(std::size_t(M) * N, -2, 2);
  std::vector<float> C = C0;
  // Without Accumulate, C's old contents must not be read: NaN would poison the result.
  if (acc == Accumulate::no) std::fill(C.begin(), C.end(), std::numeric_limits<float>::quiet_NaN());
  be.gemm(test::cpu_stream(), ta, tb, M, N, K, A.view(), B.view(), C.data(), acc);

  const auto& a = A.values();
  const auto& b = B.values();
  std::vector<double> want(C.size()), tol(C.size());
  for (int m = 0; m < M; ++m) {
    for (int n = 0; n < N; ++n) {
      double sum = 0, mag = 0;
      for (int k = 0; k < K; ++k) {
        double x = ta == Trans::no ? a[std::size_t(m) * K + k] : a[std::size_t(k) * M + m];
        double y = tb == Trans::no ? b[std::size_t(k) * N + n] : b[std::size_t(n) * K + k];
        sum += x * y;
        mag += std::fabs(x * y);
      }
      const std::size_t i = std::size_t(m) * N + n;
      if (acc == Accumulate::yes) {
        sum += C0[i];
        mag += std::fabs(C0[i]);
      }
      want[i] = sum;
      tol[i] = (K + 2) * std::ldexp(1.0, -24) * mag;
    }
  }
  EXPECT_TRUE(test::all_within("C", C, want, tol));
}

TEST(Gemm, Fp32MatchesADoubleReferenceForEveryTransposeCombination) {
  auto be = make_cpu_backend();
  test::Rng rng(1);
  for (Shape s : kShapes)
    for (Trans ta : kTrans)
      for (Trans tb : kTrans) check_gemm(*be, s, ta, tb, DType::f32, Accumulate::no, rng);
}

TEST(Gemm, Fp32AccumulateAddsTheProductToTheExistingOutput) {
  auto be = make_cpu_backend();
  test::Rng rng(2);
  for (Shape s : kShapes)
    for (Trans ta : kTrans)
      for (Trans tb : kTrans) check_gemm(*be, s, ta, tb, DType::f32, Accumulate::yes, rng);
}

TEST(Gemm, Bf16ComputesTheExactProductOfTheRoundedInputsInFp32) {
  auto be = make_cpu_backend();
  test::Rng rng(3);
  for (Shape s : kShapes)
    for (Trans ta : kTrans)
      for (Trans tb : kTrans)
        for (Accumulate acc : {Accumulate::no, Accumulate::yes})
          check_gemm(*be, s, ta, tb, DType::bf16, acc, rng);
}

// The primitive cache is keyed by shape, transposes, dtype and accumulation: interleaving calls must
// reuse the right primitive with the new pointers.
TEST(Gemm, InterleavedShapesReuseTheirCachedPrimitivesCorrectly) {
  auto be = make_cpu_backend();
  test::Rng rng(4);
  for (int round = 0; round < 2; ++round) {
    check_gemm(*be, {7, 13, 37}, Trans::no, Trans::yes, DType::f32, Accumulate::no, rng);
    check_gemm(*be, {7, 13, 37}, Trans::no, Trans::yes, DType::f32, Accumulate::yes, rng);
    check_gemm(*be, {13, 7, 37}, Trans::no, Trans::yes, DType::f32, Accumulate::no, rng);
    check_gemm(*be, {7, 13, 37}, Trans::yes, Trans::yes, DType::bf16, Accumulate::no, rng);
  }
}

TEST(Gemm, OneDnnCachesOnePrimitivePerDistinctCall) {
  OneDnnGemm g;
  std::vector<float> a(6, 1.0f), b(6, 1.0f), c(4);
  g.run(Trans::no, Trans::no, 2, 2, 3, cview(a.data()), cview(b.data()), c.data(), Accumulate::no);
  g.run(Trans::no, Trans::no, 2, 2, 3, cview(a.data()), cview(b.data()), c.data(), Accumulate::no);
  EXPECT_EQ(g.cached_primitives(), 1u);
  EXPECT_EQ(c, std::vector<float>(4, 3.0f));
  g.run(Trans::no, Trans::no, 2, 2, 3, cview(a.data()), cview(b.data()), c.data(), Accumulate::yes);
  EXPECT_EQ(g.cached_primitives(), 2u);
  EXPECT_EQ(c, std::vector<float>(4, 6.0f));
  g.run(Trans::yes, Trans::no, 2, 2, 3, cview(a.data()), cview(b.data()), c.data(), Accumulate::yes);
  EXPECT_EQ(g.cached_primitives(), 3u);
}

TEST(Gemm, MixedInputDtypesAndEmptyShapesAreErrors) {
  auto be = make_cpu_backend();
  std::vector<float> a(4), c(4);
  std::vector<bf16> b(4);
  EXPECT_THROW(
      be->gemm(test::cpu_stream(), Trans::no, Trans::no, 2, 2, 2, cview(a.data()), cview(b.data()), c.data(), Accumulate::no),
      Error);
  EXPECT_THROW(
      be->gemm(test::cpu_stream(), Trans::no, Trans::no, 0, 2, 2, cview(a.data()), cview(a.data()), c.data(), Accumulate::no),
      Error);
}

}  // namespace
}  // namespace tz
