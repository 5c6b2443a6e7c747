// Tests core/cuda/elementwise_kernels.cu against the CPU backend on the same inputs: bitwise for the
// elementwise ops (the same TZ_HOST_DEVICE math, no FMA contraction on either side) and for
// encoder_backward (the same order of adds); bias_backward within a stated tolerance and bitwise equal
// to itself on a second run. Sizes need more than one grid lap and are not multiples of a block. Skips
// without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/cuda/kernels.h"
#include "core/cuda/launch_config.h"
#include "tests/common/compare.h"
#include "tests/common/random.h"
#include "tests/common/typed_params.h"
#include "tests/cuda/kernel_test_util.h"

namespace tz {
namespace {

using test::DeviceArray;
using test::DeviceParams;

class CudaElementwise : public test::CudaKernelTest {};

constexpr float kInf = std::numeric_limits<float>::infinity();

// Values where the shared math branches, clamps, overflows or loses precision.
std::vector<float> specials() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  return {0.0f,
          -0.0f,
          1.0f,
          -1.0f,
          nan,
          -nan,
          kInf,
          -kInf,
          20.0f,
          -20.0f,
          20.01f,
          -20.01f,
          19.99f,
          -19.99f,
          43.65f,
          -43.65f,
          88.7f,
          -87.3f,
          100.0f,
          -100.0f,
          1e10f,
          -1e10f,
          3e38f,
          -3e38f,
          1e-20f,
          -1e-20f,
          std::numeric_limits<float>::denorm_min(),
          std::numeric_limits<float>::min(),
          0.5f,
          -0.5f,
          3.0f,
          -3.0f};
}

// n random floats in [lo, hi] with the specials first.
std::vector<float> with_specials(test::Rng& rng, std::size_t n, double lo, double hi) {
  std::vector<float> v = rng.floats(n, lo, hi);
  const std::vector<float> s = specials();
  for (std::size_t i = 0; i < s.size() && i < n; ++i) v[i] = s[i];
  return v;
}

// More than one lap of the grid-stride loops, not a multiple of the block size.
constexpr std::size_t kLapN = cuda::kGridLap + 12345;

TEST_F(CudaElementwise, GeluForwardAndBackwardGiveTheCpuBitsIncludingSpecials) {
  test::Rng rng(1);
  const std::vector<float> inp = with_specials(rng, kLapN, -8, 8);
  const std::vector<float> dout = with_specials(rng, kLapN, -2, 2);
  std::vector<float> want_out(kLapN), want_dinp(kLapN);
  cpu().gelu_forward(cpu_stream(), want_out.data(), inp.data(), kLapN);
  cpu().gelu_backward(cpu_stream(), want_dinp.data(), inp.data(), dout.data(), kLapN);

  DeviceArray<float> d_inp(inp, stream_), d_dout(dout, stream_), d_out(kLapN + 1), d_dinp(kLapN);
  std::vector<float> sentinel(kLapN + 1, 7.0f);
  d_out.upload(sentinel, stream_);
  cuda::gelu_forward(stream_, d_out.data(), d_inp.data(), kLapN);
  cuda::gelu_backward(stream_, d_dinp.data(), d_inp.data(), d_dout.data(), kLapN);
  std::vector<float> got_out = d_out.download(stream_);
  EXPECT_EQ(got_out.back(), 7.0f) << "gelu_forward wrote past n";
  got_out.pop_back();
  EXPECT_TRUE(test::same_bits("gelu forward", got_out, want_out));
  EXPECT_TRUE(test::same_bits("gelu backward", d_dinp.download(stream_), want_dinp));
}

TEST_F(CudaElementwise, AddAxpyAndFillGiveTheCpuBits) {
  test::Rng rng(2);
  const std::vector<float> a = with_specials(rng, kLapN, -1e3, 1e3);
  const std::vector<float> b = rng.floats(kLapN, -1e3, 1e3);
  const std::vector<float> y0 = rng.floats(kLapN, -10, 10);
  const float alpha = -0.3712f;
  std::vector<float> want_sum(kLapN), want_y = y0, want_fill(kLapN);
  cpu().add(cpu_stream(), want_sum.data(), a.data(), b.data(), kLapN);
  cpu().axpy(cpu_stream(), want_y.data(), alpha, a.data(), kLapN);
  cpu().fill(cpu_stream(), want_fill.data(), -3.25f, kLapN);

  DeviceArray<float> d_a(a, stream_), d_b(b, stream_), d_sum(kLapN), d_y(y0, stream_), d_fill(kLapN);
  cuda::add(stream_, d_sum.data(), d_a.data(), d_b.data(), kLapN);
  cuda::axpy(stream_, d_y.data(), alpha, d_a.data(), kLapN);
  cuda::fill(stream_, d_fill.data(), -3.25f, kLapN);
  EXPECT_TRUE(test::same_bits("add", d_sum.download(stream_), want_sum));
  EXPECT_TRUE(test::same_bits("axpy", d_y.download(stream_), want_y));
  EXPECT_TRUE(test::same_bits("fill", d_fill.download(stream_), want_fill));
}

TEST_F(CudaElementwise, EmptyLaunchesDoNothingAndSucceed) {
  cuda::gelu_forward(stream_, View{}, CView{}, 0);
  cuda::add(stream_, View{}, CView{}, CView{}, 0);
  cuda::fill(stream_, View{}, 1.0f, 0);
  cuda::fill(stream_, View{nullptr, DType::bf16}, 1.0f, 0);
  cuda::cast(stream_, nullptr, DType::bf16, nullptr, DType::f32, 0);
  cuda::add_bias(stream_, View{}, CView{nullptr, DType::bf16}, 0, 5);
  cuda::add_bias(stream_, View{nullptr, DType::f16}, CView{nullptr, DType::bf16}, 0, 5);
  EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
}

// Host bytes of n random bit patterns of dtype t (every exponent, NaN and Inf among them).
std::vector<std::uint8_t> random_patterns(test::Rng& rng, DType t, std::size_t n) {
  std::vector<std::uint8_t> v(n * dtype_size(t));
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t bits = rng.bits32();
    std::memcpy(v.data() + i * dtype_size(t), &bits, dtype_size(t));
  }
  return v;
}

TEST_F(CudaElementwise, CastBetweenEveryPairOfFloatTypesGivesTheCpuBits) {
  constexpr std::size_t n = 100003;
  test::Rng rng(3);
  for (DType st : test::kParamDtypes) {
    const std::vector<std::uint8_t> src = random_patterns(rng, st, n);
    DeviceArray<std::uint8_t> d_src(src, stream_);
    for (DType dt : test::kParamDtypes) {
      SCOPED_TRACE(test::dtype_label(st) + " -> " + test::dtype_label(dt));
      std::vector<std::uint8_t> want(n * dtype_size(dt));
      cpu().cast(cpu_stream(), want.data(), dt, src.data(), st, n);
      DeviceArray<std::uint8_t> d_dst(want.size());
      cuda::cast(stream_, d_dst.data(), dt, d_src.data(), st, n);
      // Every conversion is integer arithmetic on the bits (dtype.h), NaN payloads included: the
      // bytes must match.
      const std::vector<std::uint8_t> got = d_dst.download(stream_);
      EXPECT_TRUE(test::all_bits_equal("cast bytes", got.data(), want.data(), want.size()));
    }
  }
}

TEST_F(CudaElementwise, CastRefusesAnIntegerTypeByName) {
  DeviceArray<float> buf(4);
  try {
    cuda::cast(stream_, buf.data(), DType::i32, buf.data(), DType::f32, 4);
    FAIL() << "cast to int32 did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("int32"), std::string::npos) << e.what();
  }
}

TEST_F(CudaElementwise, AddBiasGivesTheCpuBitsForEveryParamDtype) {
  constexpr int rows = 4099, cols = 523;  // > one grid lap, cols not a multiple of 32
  test::Rng rng(4);
  const std::vector<float> out0 = with_specials(rng, std::size_t(rows) * cols, -5, 5);
  for (DType t : test::kParamDtypes) {
    SCOPED_TRACE(test::dtype_label(t));
    const test::TypedParams bias(rng.floats(cols, -2, 2), t);
    std::vector<float> want = out0;
    cpu().add_bias(cpu_stream(), want.data(), bias.view(), rows, cols);
    DeviceParams d_bias(bias.view(), cols, stream_);
    DeviceArray<float> d_out(out0, stream_);
    cuda::add_bias(stream_, d_out.data(), d_bias.view(), rows, cols);
    EXPECT_TRUE(test::same_bits("add_bias", d_out.download(stream_), want));
  }
}

TEST_F(CudaElementwise, EncoderForwardGivesTheCpuBitsForEveryParamDtype) {
  constexpr int B = 3, T = 347, C = 2053, V = 1000;  // B*T*C > one grid lap
  test::Rng rng(5);
  std::vector<std::int32_t> tokens(B * T);
  for (auto& tok : tokens) tok = rng.below(V);
  DeviceArray<std::int32_t> d_tokens(tokens, stream_);
  for (DType t : test::kParamDtypes) {
    SCOPED_TRACE(test::dtype_label(t));
    const test::TypedParams wte(rng.floats(std::size_t(V) * C, -1, 1), t);
    const test::TypedParams wpe(rng.floats(std::size_t(T) * C, -1, 1), t);
    std::vector<float> want(std::size_t(B) * T * C);
    cpu().encoder_forward(cpu_stream(), want.data(), tokens.data(), wte.view(), wpe.view(), B, T, C);
    DeviceParams d_wte(wte.view(), std::size_t(V) * C, stream_),
        d_wpe(wpe.view(), std::size_t(T) * C, stream_);
    DeviceArray<float> d_out(want.size());
    cuda::encoder_forward(stream_, d_out.data(), d_tokens.data(), d_wte.view(), d_wpe.view(), B, T, C);
    EXPECT_TRUE(test::same_bits("encoder_forward", d_out.download(stream_), want));
  }
}

TEST_F(CudaElementwise, EncoderBackwardWithRepeatedTokensGivesTheCpuBits) {
  // A 50-token vocabulary over 516 positions: every row of dwte gets about ten positions' adds, which
  // must land in position order (as on the CPU) for the bits to match.
  constexpr int B = 4, T = 129, C = 777, V = 50;
  test::Rng rng(6);
  std::vector<std::int32_t> tokens(B * T);
  for (auto& tok : tokens) tok = rng.below(V);
  const std::vector<float> dout = rng.floats(std::size_t(B) * T * C, -1, 1);
  const std::vector<float> dwte0 = rng.floats(std::size_t(V) * C, -1, 1);
  const std::vector<float> dwpe0 = rng.floats(std::size_t(T) * C, -1, 1);
  std::vector<float> want_wte = dwte0, want_wpe = dwpe0;
  cpu().encoder_backward(cpu_stream(), want_wte.data(), want_wpe.data(), dout.data(), tokens.data(), B, T, C);

  DeviceArray<std::int32_t> d_tokens(tokens, stream_);
  DeviceArray<float> d_dout(dout, stream_), d_wte(dwte0, stream_), d_wpe(dwpe0, stream_);
  cuda::encoder_backward(stream_, d_wte.data(), d_wpe.data(), d_dout.data(), d_tokens.data(), B, T, C);
  EXPECT_TRUE(test::same_bits("dwte", d_wte.download(stream_), want_wte));
  EXPECT_TRUE(test::same_bits("dwpe", d_wpe.download(stream_), want_wpe));
}

TEST_F(CudaElementwise, BiasBackwardMatchesTheCpuWithinTolerancesAndRepeatsItsBits) {
  constexpr int rows = 1031, cols = 1001;
  test::Rng rng(7);
  const std::vector<float> dout = rng.floats(std::size_t(rows) * cols, -1, 1);
  const std::vector<float> db0 = rng.floats(cols, -1, 1);
  std::vector<float> want = db0;
  cpu().bias_backward(cpu_stream(), want.data(), dout.data(), rows, cols);
  // Both sides sum the same floats in different orders: each within 1e-5 of the column's sum of
  // magnitudes (float rounding over ~1000 adds is a few 1e-7 of it, the order's effect smaller).
  std::vector<double> tol(cols);
  for (int c = 0; c < cols; ++c) {
    double mag = std::fabs(db0[c]);
    for (int r = 0; r < rows; ++r) mag += std::fabs(dout[std::size_t(r) * cols + c]);
    tol[c] = 1e-5 * mag;
  }
  DeviceArray<float> d_dout(dout, stream_), d_db(db0, stream_);
  cuda::bias_backward(stream_, d_db.data(), d_dout.data(), rows, cols);
  const std::vector<float> first = d_db.download(stream_);
  EXPECT_TRUE(test::within("bias_backward", first, want, tol));
  d_db.upload(db0, stream_);
  cuda::bias_backward(stream_, d_db.data(), d_dout.data(), rows, cols);
  EXPECT_TRUE(test::same_bits("bias_backward run twice", d_db.download(stream_), first));
}

}  // namespace
}  // namespace tz
