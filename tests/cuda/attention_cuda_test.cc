// Tests core/cuda/kernels.h's fused attention (attention_forward / attention_backward, and the
// tensor-core path of attention_math.h) against the cpu backend element by element, its saved
// log-sum-exp against a double reference, that dqkv is written everywhere, and that runs repeat
// bitwise. Skips when no CUDA device is usable.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "core/backend.h"
#include "core/cuda/attention_math.h"
#include "core/cuda/cuda_runtime.h"
#include "core/cuda/kernels.h"
#include "tests/common/compare.h"
#include "tests/common/random.h"
#include "tests/common/stream.h"
#include "tests/cuda/kernel_test_util.h"

namespace tz {
namespace {

using test::DeviceArray;

struct Shape {
  int B, T, C, NH;
};

std::string label(Shape s) {
  return "B" + std::to_string(s.B) + "_T" + std::to_string(s.T) + "_C" + std::to_string(s.C) + "_NH" +
         std::to_string(s.NH);
}

struct Inputs {
  std::vector<float> qkv, dout;
};

Inputs random_inputs(Shape s, std::uint64_t seed) {
  test::Rng rng(seed);
  Inputs in;
  in.qkv = rng.floats(std::size_t(s.B) * s.T * 3 * s.C, -2, 2);
  in.dout = rng.floats(std::size_t(s.B) * s.T * s.C, -2, 2);
  return in;
}

struct Result {
  std::vector<float> out, lse, dqkv;
};

// The cpu backend on host memory (it keeps probabilities [B,NH,T,T], and as much scratch).
Result run_cpu(const Inputs& in, Shape s) {
  auto be = make_cpu_backend();
  const std::size_t att = std::size_t(s.B) * s.NH * s.T * s.T;
  std::vector<float> probs(att), scratch(att);
  Result r{std::vector<float>(in.dout.size()), {}, std::vector<float>(in.qkv.size())};
  be->attention_forward(test::cpu_stream(), r.out.data(), probs.data(), in.qkv.data(), s.B, s.T, s.C, s.NH);
  be->attention_backward(test::cpu_stream(), r.dqkv.data(), scratch.data(), in.dout.data(), in.qkv.data(),
                         r.out.data(), probs.data(), s.B, s.T, s.C, s.NH);
  return r;
}

// Forward then backward on the device, as training runs them (backward gets the device's out). out,
// lse, drow and dqkv start as NaN: everything read back must have been written.
Result run_cuda(const Inputs& in, Shape s, cudaStream_t stream,
                cuda::AttentionMath math = cuda::AttentionMath::fp32_simt) {
  const std::size_t rows = std::size_t(s.B) * s.NH * s.T;
  DeviceArray<float> qkv(in.qkv.size()), dout(in.dout.size()), out(in.dout.size()), lse(rows), drow(rows),
      dqkv(in.qkv.size());
  qkv.upload(in.qkv, stream);
  dout.upload(in.dout, stream);
  out.fill_bytes(0xff, stream);
  lse.fill_bytes(0xff, stream);
  drow.fill_bytes(0xff, stream);
  dqkv.fill_bytes(0xff, stream);
  if (math == cuda::AttentionMath::fp32_simt) {  // kernels.h's functions, as the backend calls them
    cuda::attention_forward(stream, out.data(), lse.data(), qkv.data(), s.B, s.T, s.C, s.NH);
    cuda::attention_backward(stream, dqkv.data(), drow.data(), dout.data(), qkv.data(), out.data(),
                             lse.data(), s.B, s.T, s.C, s.NH);
  } else {
    cuda::attention_forward(stream, out.data(), lse.data(), qkv.data(), s.B, s.T, s.C, s.NH, math);
    cuda::attention_backward(stream, dqkv.data(), drow.data(), dout.data(), qkv.data(), out.data(),
                             lse.data(), s.B, s.T, s.C, s.NH, math);
  }
  Result r;
  r.out = out.download(stream);
  r.lse = lse.download(stream);
  r.dqkv = dqkv.download(stream);
  return r;
}

void expect_same_bits(const Result& a, const Result& b) {
  auto bits = [](const std::vector<float>& v) {
    std::vector<std::uint32_t> u(v.size());
    std::memcpy(u.data(), v.data(), v.size() * sizeof(float));
    return u;
  };
  for (auto [what, x, y] : {std::tuple{"out", &a.out, &b.out}, std::tuple{"lse", &a.lse, &b.lse},
                            std::tuple{"dqkv", &a.dqkv, &b.dqkv}}) {
    const auto bx = bits(*x), by = bits(*y);
    EXPECT_TRUE(test::all_bits_equal(what, bx.data(), by.data(), bx.size()));
  }
}

class CudaAttention : public test::CudaKernelTest, public ::testing::WithParamInterface<Shape> {};

// Tolerance against the cpu backend (fp32 both; the device uses math::exp_f, as the cpu does, and
// fmaf, in another summation order, with an online softmax and probabilities recomputed from lse).
// Measured on these shapes (inputs in [-2, 2], T up to 4096): the cpu backend's own fp32 error
// against a double reference stays within 1.2e-6 absolute past 1e-4 relative, and a host emulation
// of these kernels (same fmaf and exp_f arithmetic) within 1.6e-6 of the cpu algorithm; 2e-5 + 1e-4
// leaves a margin of ten. A missing scale or softmax term is off by > 0.1.
constexpr double kAtol = 2e-5, kRtol = 1e-4;

// Head sizes 8 (two shapes), 16, 24, 64 (GPT-2), 96, 128, 200 and 256; T of 1, below, at and past the
// 64- and 32-row tiles (7, 33, 64, 70, 130, 257), 1024 and 4096.
const Shape kShapes[] = {{1, 1, 8, 1},    {2, 7, 24, 3},    {2, 33, 32, 2},     {1, 100, 48, 2},
                         {2, 64, 128, 2}, {1, 130, 256, 4}, {1, 257, 512, 4},   {1, 50, 192, 2},
                         {1, 40, 200, 1}, {1, 70, 512, 2},  {1, 1024, 768, 12}, {1, 4096, 64, 1}};

TEST_P(CudaAttention, OutAndDqkvMatchTheCpuBackendElementByElement) {
  const Shape s = GetParam();
  const Inputs in = random_inputs(s, 60);
  const Result want = run_cpu(in, s);
  const Result got = run_cuda(in, s, stream_);
  EXPECT_TRUE(test::all_near("out", got.out, want.out, kAtol, kRtol));
  EXPECT_TRUE(test::all_near("dqkv", got.dqkv, want.dqkv, kAtol, kRtol));
}

TEST_P(CudaAttention, DqkvHasNoNaNWhenItStartsAsNaN) {
  const Shape s = GetParam();
  const Result got = run_cuda(random_inputs(s, 61), s, stream_);
  std::size_t nan = 0;
  for (float x : got.dqkv) nan += std::isnan(x) ? 1 : 0;
  EXPECT_EQ(nan, 0u) << "of " << got.dqkv.size() << " dqkv elements";
}

TEST_P(CudaAttention, TwoRunsGiveTheSameBits) {
  const Shape s = GetParam();
  const Inputs in = random_inputs(s, 62);
  const Result a = run_cuda(in, s, stream_);
  const Result b = run_cuda(in, s, stream_);
  expect_same_bits(a, b);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaAttention, ::testing::ValuesIn(kShapes),
                         [](const ::testing::TestParamInfo<Shape>& info) { return label(info.param); });

// The tensor-core path (AttentionMath::bf16_tensor_cores): q, k, v, dout, P and dS rounded to bf16
// (relative error 2^-9) before products with fp32 accumulation. Measured against the cpu algorithm on a
// host emulation of these kernels (exact bf16 products summed in fp32), inputs in [-2, 2], T up to
// 4096: the largest error is 0.023 (|dqkv| up to 7), and every element is within 0.014 absolute past
// 5% relative; 0.03 + 5% leaves a margin of two. A wrong mask, scale or tile is off by far more.
constexpr double kBf16Atol = 0.03, kBf16Rtol = 0.05;

class CudaAttentionBf16 : public CudaAttention {};

// Head sizes 8, 64, 96 and 128 (up to 128, padded to 64 or 128); T across the 64-row tiles, 1024
// and 4096.
const Shape kBf16Shapes[] = {{1, 1, 8, 1},     {2, 7, 24, 3},  {2, 64, 128, 2},    {1, 130, 256, 4},
                             {1, 257, 512, 4}, {3, 65, 96, 6}, {1, 1024, 768, 12}, {1, 4096, 64, 1}};

TEST_P(CudaAttentionBf16, OutAndDqkvMatchTheCpuBackendWithinBf16Rounding) {
  const Shape s = GetParam();
  const Inputs in = random_inputs(s, 64);
  const Result want = run_cpu(in, s);
  const Result got = run_cuda(in, s, stream_, cuda::AttentionMath::bf16_tensor_cores);
  EXPECT_TRUE(test::all_near("out", got.out, want.out, kBf16Atol, kBf16Rtol));
  EXPECT_TRUE(test::all_near("dqkv", got.dqkv, want.dqkv, kBf16Atol, kBf16Rtol));
  std::size_t nan = 0;
  for (float x : got.dqkv) nan += std::isnan(x) ? 1 : 0;
  EXPECT_EQ(nan, 0u) << "of " << got.dqkv.size() << " dqkv elements (they start as NaN)";
}

TEST_P(CudaAttentionBf16, TwoRunsGiveTheSameBits) {
  const Shape s = GetParam();
  const Inputs in = random_inputs(s, 65);
  expect_same_bits(run_cuda(in, s, stream_, cuda::AttentionMath::bf16_tensor_cores),
                   run_cuda(in, s, stream_, cuda::AttentionMath::bf16_tensor_cores));
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaAttentionBf16, ::testing::ValuesIn(kBf16Shapes),
                         [](const ::testing::TestParamInfo<Shape>& info) { return label(info.param); });

// lse[b,h,t] = log(sum_{t2 <= t} exp(q_t . k_t2 / sqrt(hs))), computed in double on the host. The
// device's is m + log(l) in fp32 (scores are fp32 dot products of hs <= 64 terms below 4, each off by
// ~1e-6; |lse| < 20): within 2e-5 absolute + 1e-5 relative.
TEST_F(CudaAttention, LogSumExpMatchesADoubleReference) {
  for (const Shape s : {Shape{2, 7, 24, 3}, Shape{1, 130, 256, 4}}) {
    SCOPED_TRACE(label(s));
    const Inputs in = random_inputs(s, 63);
    const Result got = run_cuda(in, s, stream_);
    const int hs = s.C / s.NH;
    const std::size_t C3 = std::size_t(3) * s.C;
    std::vector<double> want(got.lse.size());
    for (int b = 0; b < s.B; ++b)
      for (int h = 0; h < s.NH; ++h)
        for (int t = 0; t < s.T; ++t) {
          std::vector<double> sc(t + 1);
          double mx = -HUGE_VAL, sum = 0;
          for (int t2 = 0; t2 <= t; ++t2) {
            double dot = 0;
            for (int i = 0; i < hs; ++i)
              dot += double(in.qkv[(std::size_t(b) * s.T + t) * C3 + h * hs + i]) *
                     double(in.qkv[(std::size_t(b) * s.T + t2) * C3 + s.C + h * hs + i]);
            sc[t2] = dot / std::sqrt(double(hs));
            mx = std::max(mx, sc[t2]);
          }
          for (double x : sc) sum += std::exp(x - mx);
          want[(std::size_t(b) * s.NH + h) * s.T + t] = mx + std::log(sum);
        }
    EXPECT_TRUE(test::all_near("lse", got.lse, want, 2e-5, 1e-5));
  }
}

// Shapes are checked on the host before anything reaches a device, so these run without one.
TEST(CudaAttentionShape, AHeadSizeOver256IsRefusedByName) {
  try {
    cuda::attention_forward(cudaStream_t{}, nullptr, nullptr, nullptr, 1, 4, 257, 1);
    FAIL() << "head size 257 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("head size 257"), std::string::npos) << e.what();
  }
}

TEST(CudaAttentionShape, TheBf16PathRefusesAHeadSizeOver128ByName) {
  try {
    cuda::attention_forward(cudaStream_t{}, nullptr, nullptr, nullptr, 1, 4, 200, 1,
                            cuda::AttentionMath::bf16_tensor_cores);
    FAIL() << "head size 200 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("head size 200"), std::string::npos) << e.what();
  }
}

TEST(CudaAttentionShape, AChannelCountNotAMultipleOfTheHeadsIsRefused) {
  try {
    cuda::attention_backward(cudaStream_t{}, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 4, 10,
                             3);
    FAIL() << "C = 10 with NH = 3 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of NH"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tz
