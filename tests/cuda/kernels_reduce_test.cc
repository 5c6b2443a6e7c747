// Tests core/cuda/reduce_kernels.cu against the CPU backend: sum and sum_squares within 1e-10 of the
// sum of magnitudes (both sum in double over the same chunks, in different orders inside a chunk) and
// bitwise equal to themselves on a second run, over sizes from empty to more than one round of chunks;
// the double-array sum bitwise (the same order); check_finite on finite arrays and on NaN and Inf at the
// ends and in the middle. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/cuda/kernels.h"
#include "core/cuda/launch_config.h"
#include "tests/common/random.h"
#include "tests/cuda/kernel_test_util.h"

namespace tz {
namespace {

using test::DeviceArray;

class CudaReduce : public test::CudaKernelTest {
 protected:
  // acc0 + the kernel's sum, read back.
  template <typename F>
  double run(double acc0, F&& launch) {
    DeviceArray<double> acc(std::vector<double>{acc0}, stream_);
    launch(acc.data());
    return acc.download(stream_)[0];
  }
};

// Sizes around the chunk (2^16) and past one round of chunks (kSumRoundChunks chunks).
const std::size_t kSizes[] = {
    0,
    1,
    255,
    cuda::kSumChunk,
    cuda::kSumChunk + 1,
    3 * cuda::kSumChunk + 5,
    std::size_t(cuda::kSumRoundChunks) * cuda::kSumChunk + 3 * cuda::kSumChunk + 77};

TEST_F(CudaReduce, SumMatchesTheCpuAndRepeatsItsBitsAtEverySize) {
  std::uint64_t seed = 20;
  for (std::size_t n : kSizes) {
    SCOPED_TRACE("n = " + std::to_string(n));
    test::Rng rng(seed++);
    const std::vector<float> x = rng.floats(n, -0.5, 1.5);
    double mag = 1.5;
    for (float v : x) mag += std::fabs(v);
    double want = 1.5;
    cpu().sum(cpu_stream(), &want, x.data(), n);
    DeviceArray<float> d_x(x, stream_);
    const double got = run(1.5, [&](double* acc) { cuda::sum(stream_, acc, d_x.data(), n); });
    EXPECT_NEAR(got, want, 1e-10 * mag);
    const double again = run(1.5, [&](double* acc) { cuda::sum(stream_, acc, d_x.data(), n); });
    EXPECT_EQ(test::bits_of(again), test::bits_of(got)) << "a second run gave other bits";
  }
}

TEST_F(CudaReduce, SumSquaresMatchesTheCpuAndRepeatsItsBitsAtEverySize) {
  std::uint64_t seed = 40;
  for (std::size_t n : kSizes) {
    SCOPED_TRACE("n = " + std::to_string(n));
    test::Rng rng(seed++);
    const std::vector<float> x = rng.floats(n, -3, 3);
    double mag = 0.25;
    for (float v : x) mag += double(v) * double(v);
    double want = 0.25;
    cpu().sum_squares(cpu_stream(), &want, x.data(), n);
    DeviceArray<float> d_x(x, stream_);
    const double got = run(0.25, [&](double* acc) { cuda::sum_squares(stream_, acc, d_x.data(), n); });
    EXPECT_NEAR(got, want, 1e-10 * mag);
    const double again = run(0.25, [&](double* acc) { cuda::sum_squares(stream_, acc, d_x.data(), n); });
    EXPECT_EQ(test::bits_of(again), test::bits_of(got)) << "a second run gave other bits";
  }
}

TEST_F(CudaReduce, SumOfDoublesAddsInOrderAndGivesTheCpuBits) {
  test::Rng rng(60);
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(1000)}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    std::vector<double> x(n);
    for (auto& v : x) v = rng.uniform(-1e6, 1e6) * rng.unit();  // mixed magnitudes: the order shows
    double want = 0.125;
    cpu().sum(cpu_stream(), &want, x.data(), n);
    DeviceArray<double> d_x(x, stream_);
    const double got = run(0.125, [&](double* acc) { cuda::sum(stream_, acc, d_x.data(), n); });
    EXPECT_EQ(test::bits_of(got), test::bits_of(want)) << got << " vs " << want;
  }
}

TEST_F(CudaReduce, CheckFiniteLeavesAFiniteAccumulatorAndMarksNaNOrInfAnywhere) {
  constexpr std::size_t n = cuda::kGridLap + 4321;
  test::Rng rng(70);
  const std::vector<float> finite = rng.floats(n, -3e38, 3e38);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  struct Case {
    const char* name;
    std::size_t at;
    float value;
  };
  const Case cases[] = {{"all finite", 0, finite[0]},
                        {"NaN last", n - 1, nan},
                        {"Inf in the middle", n / 2 + 3, inf},
                        {"-Inf first", 0, -inf},
                        {"largest finite", 7, 3.4028235e38f}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<float> x = finite;
    x[c.at] = c.value;
    double want = 2.5;
    cpu().check_finite(cpu_stream(), &want, x.data(), n);
    DeviceArray<float> d_x(x, stream_);
    const double got = run(2.5, [&](double* acc) { cuda::check_finite(stream_, acc, d_x.data(), n); });
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(got)) << got;
    else
      EXPECT_EQ(test::bits_of(got), test::bits_of(want)) << got << " vs " << want;
  }
}

}  // namespace
}  // namespace tz
