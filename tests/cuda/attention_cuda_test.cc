// Tests core/cuda/kernels.h's fused attention (attention_forward / attention_backward, and the
// tensor-core path of attention_math.h) against the cpu backend element by element, multi-head (GPT-2)
// and grouped-query (Llama: NH / KVH of 1, 2, 3, 4, 7 and multi-query), its saved log-sum-exp against a
// double reference, that dqkv is written everywhere, that runs repeat bitwise, and that grouped heads
// read keys and values in place exactly as a multi-head run over repeated copies would. Skips when no
// CUDA device is usable (the shape checks run without one).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "core/backend.h"
#include "core/cuda/attention_math.h"
#include "core/cuda/cuda_device.h"
#include "core/cuda/cuda_runtime.h"
#include "core/cuda/kernels.h"
#include "core/device.h"
#include "tests/common/compare.h"
#include "tests/common/random.h"
#include "tests/common/stream.h"
#include "tests/cuda/kernel_test_util.h"

namespace tz {
namespace {

using test::DeviceArray;

// GPT-2's multi-head shape: qkv [B,T,3C], NH heads of C / NH.
struct Shape {
  int B, T, C, NH;
  AttentionShape attention() const { return AttentionShape::multi_head(B, T, C, NH); }
};

std::string label(Shape s) {
  return "B" + std::to_string(s.B) + "_T" + std::to_string(s.T) + "_C" + std::to_string(s.C) + "_NH" +
         std::to_string(s.NH);
}

std::string label(const AttentionShape& a) {
  return "B" + std::to_string(a.B) + "_T" + std::to_string(a.T) + "_NH" + std::to_string(a.NH) + "_KVH" +
         std::to_string(a.KVH) + "_hd" + std::to_string(a.hd);
}

struct Inputs {
  std::vector<float> qkv, dout;
};

Inputs random_inputs(const AttentionShape& a, std::uint64_t seed) {
  test::Rng rng(seed);
  Inputs in;
  in.qkv = rng.floats(std::size_t(a.B) * a.T * a.qkv_width(), -2, 2);
  in.dout = rng.floats(std::size_t(a.B) * a.T * a.out_width(), -2, 2);
  return in;
}
Inputs random_inputs(Shape s, std::uint64_t seed) { return random_inputs(s.attention(), seed); }

struct Result {
  std::vector<float> out, lse, dqkv;
};

// The cpu backend on host memory (it keeps probabilities [B,NH,T,T], and as much scratch).
Result run_cpu(const Inputs& in, const AttentionShape& a) {
  auto be = make_cpu_backend();
  const std::size_t att = std::size_t(a.B) * a.NH * a.T * a.T;
  std::vector<float> probs(att), scratch(att);
  Result r{std::vector<float>(in.dout.size()), {}, std::vector<float>(in.qkv.size())};
  be->attention_forward(test::cpu_stream(), r.out.data(), probs.data(), scratch.data(), in.qkv.data(), a);
  be->attention_backward(test::cpu_stream(), r.dqkv.data(), scratch.data(), in.dout.data(), in.qkv.data(),
                         r.out.data(), probs.data(), a);
  return r;
}
Result run_cpu(const Inputs& in, Shape s) { return run_cpu(in, s.attention()); }

// Forward then backward on the device, as training runs them (backward gets the device's out). out,
// lse, drow and dqkv start as NaN: everything read back must have been written.
Result run_cuda(const Inputs& in, const AttentionShape& a, cudaStream_t stream,
                cuda::AttentionMath math = cuda::AttentionMath::fp32_simt) {
  const std::size_t rows = std::size_t(a.B) * a.NH * a.T;
  DeviceArray<float> qkv(in.qkv.size()), dout(in.dout.size()), out(in.dout.size()), lse(rows), drow(rows),
      dqkv(in.qkv.size());
  qkv.upload(in.qkv, stream);
  dout.upload(in.dout, stream);
  out.fill_bytes(0xff, stream);
  lse.fill_bytes(0xff, stream);
  drow.fill_bytes(0xff, stream);
  dqkv.fill_bytes(0xff, stream);
  if (math == cuda::AttentionMath::fp32_simt) {  // kernels.h's functions, as the backend calls them
    cuda::attention_forward(stream, out.data(), lse.data(), qkv.data(), a);
    cuda::attention_backward(stream, dqkv.data(), drow.data(), dout.data(), qkv.data(), out.data(),
                             lse.data(), a);
  } else {
    cuda::attention_forward(stream, out.data(), lse.data(), qkv.data(), a, math);
    cuda::attention_backward(stream, dqkv.data(), drow.data(), dout.data(), qkv.data(), out.data(),
                             lse.data(), a, math);
  }
  Result r;
  r.out = out.download(stream);
  r.lse = lse.download(stream);
  r.dqkv = dqkv.download(stream);
  return r;
}
Result run_cuda(const Inputs& in, Shape s, cudaStream_t stream,
                cuda::AttentionMath math = cuda::AttentionMath::fp32_simt) {
  return run_cuda(in, s.attention(), stream, math);
}

std::size_t count_nan(const std::vector<float>& v) {
  std::size_t nan = 0;
  for (float x : v) nan += std::isnan(x) ? 1 : 0;
  return nan;
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
  EXPECT_EQ(count_nan(got.dqkv), 0u) << "of " << got.dqkv.size() << " dqkv elements";
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
  EXPECT_EQ(count_nan(got.dqkv), 0u) << "of " << got.dqkv.size() << " dqkv elements (they start as NaN)";
}

TEST_P(CudaAttentionBf16, TwoRunsGiveTheSameBits) {
  const Shape s = GetParam();
  const Inputs in = random_inputs(s, 65);
  expect_same_bits(run_cuda(in, s, stream_, cuda::AttentionMath::bf16_tensor_cores),
                   run_cuda(in, s, stream_, cuda::AttentionMath::bf16_tensor_cores));
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaAttentionBf16, ::testing::ValuesIn(kBf16Shapes),
                         [](const ::testing::TestParamInfo<Shape>& info) { return label(info.param); });

// Grouped-query attention (Llama): NH query heads over KVH key-value heads, G = NH / KVH of 1, 2, 3, 4
// and 7 and multi-query (KVH = 1), head sizes 64 and 128, T below, at and past the 64-row tiles.
// Llama 3.2 1B's heads (32 over 8, hd 64) among them.
const AttentionShape kGqaShapes[] = {{2, 70, 4, 4, 64},   {1, 130, 8, 4, 128}, {2, 65, 6, 2, 64},
                                     {1, 64, 12, 4, 128}, {1, 100, 8, 2, 128}, {1, 256, 32, 8, 64},
                                     {1, 70, 14, 2, 64},  {1, 33, 14, 2, 128}, {2, 33, 4, 1, 64},
                                     {1, 130, 8, 1, 128}, {1, 257, 7, 1, 128}, {3, 7, 3, 1, 64}};

// Per element tolerances against the cpu backend: atol + rtol |want|, with atol times sqrt(G) on the k
// and v columns, whose gradients sum G query heads' contributions, each off by about one head's error
// (independent roundings add as a square root). q columns and out keep one head's tolerance.
std::vector<double> gqa_tolerance(const AttentionShape& a, const std::vector<float>& want, std::size_t row,
                                  double atol, double rtol) {
  std::vector<double> tol(want.size());
  const double kv_atol = atol * std::sqrt(double(a.group()));
  for (std::size_t i = 0; i < want.size(); ++i) {
    const bool kv = row == std::size_t(a.qkv_width()) && i % row >= std::size_t(a.out_width());
    tol[i] = (kv ? kv_atol : atol) + rtol * std::fabs(want[i]);
  }
  return tol;
}

void expect_near_cpu(const AttentionShape& a, const Result& got, const Result& want, double atol,
                     double rtol) {
  EXPECT_TRUE(test::within("out", got.out, want.out, gqa_tolerance(a, want.out, a.out_width(), atol, rtol)));
  EXPECT_TRUE(
      test::within("dqkv", got.dqkv, want.dqkv, gqa_tolerance(a, want.dqkv, a.qkv_width(), atol, rtol)));
  EXPECT_EQ(count_nan(got.out), 0u) << "of " << got.out.size() << " out elements (they start as NaN)";
  EXPECT_EQ(count_nan(got.dqkv), 0u) << "of " << got.dqkv.size() << " dqkv elements (they start as NaN)";
}

// The multi-head equivalent of a grouped-query input: every query head given its own copy of its
// key-value head's k and v (what the kernels must never build, built here on the host to compare).
Inputs repeat_kv(const Inputs& in, const AttentionShape& a) {
  const AttentionShape m{a.B, a.T, a.NH, a.NH, a.hd};
  const std::size_t W = a.qkv_width(), MW = m.qkv_width(), O = a.out_width(), hd = a.hd;
  Inputs r{std::vector<float>(std::size_t(a.B) * a.T * MW), in.dout};
  for (std::size_t row = 0; row < std::size_t(a.B) * a.T; ++row) {
    const float* src = in.qkv.data() + row * W;
    float* dst = r.qkv.data() + row * MW;
    std::copy(src, src + O, dst);
    for (int h = 0; h < a.NH; ++h) {
      const std::size_t kv = std::size_t(h / a.group()) * hd;
      std::copy(src + O + kv, src + O + kv + hd, dst + O + h * hd);
      std::copy(src + O + a.KVH * hd + kv, src + O + a.KVH * hd + kv + hd, dst + 2 * O + h * hd);
    }
  }
  return r;
}

class CudaAttentionGqa : public test::CudaKernelTest, public ::testing::WithParamInterface<AttentionShape> {};

TEST_P(CudaAttentionGqa, OutAndDqkvMatchTheCpuBackendElementByElement) {
  const AttentionShape a = GetParam();
  const Inputs in = random_inputs(a, 70);
  expect_near_cpu(a, run_cuda(in, a, stream_), run_cpu(in, a), kAtol, kRtol);
}

TEST_P(CudaAttentionGqa, TheBf16PathMatchesTheCpuBackendWithinBf16Rounding) {
  const AttentionShape a = GetParam();
  const Inputs in = random_inputs(a, 71);
  expect_near_cpu(a, run_cuda(in, a, stream_, cuda::AttentionMath::bf16_tensor_cores), run_cpu(in, a),
                  kBf16Atol, kBf16Rtol);
}

TEST_P(CudaAttentionGqa, TwoRunsGiveTheSameBitsOnBothPaths) {
  const AttentionShape a = GetParam();
  const Inputs in = random_inputs(a, 72);
  for (cuda::AttentionMath math : {cuda::AttentionMath::fp32_simt, cuda::AttentionMath::bf16_tensor_cores}) {
    SCOPED_TRACE(math == cuda::AttentionMath::fp32_simt ? "fp32" : "bf16");
    expect_same_bits(run_cuda(in, a, stream_, math), run_cuda(in, a, stream_, math));
  }
}

// Reading a shared key-value head in place is the multi-head computation on repeated copies: out, lse
// and dq bit for bit (the same values through the same arithmetic), and dK, dV the sum over the group of
// the repeated heads' gradients (summed here in another order: within rounding).
TEST_P(CudaAttentionGqa, SharedKeyValueHeadsAreTheMultiHeadResultOnRepeatedCopies) {
  const AttentionShape a = GetParam();
  const AttentionShape m{a.B, a.T, a.NH, a.NH, a.hd};
  const Inputs in = random_inputs(a, 73);
  const Inputs rep = repeat_kv(in, a);
  for (cuda::AttentionMath math : {cuda::AttentionMath::fp32_simt, cuda::AttentionMath::bf16_tensor_cores}) {
    SCOPED_TRACE(math == cuda::AttentionMath::fp32_simt ? "fp32" : "bf16");
    const Result got = run_cuda(in, a, stream_, math), want = run_cuda(rep, m, stream_, math);
    EXPECT_TRUE(test::same_bits("out", got.out, want.out));
    EXPECT_TRUE(test::same_bits("lse", got.lse, want.lse));
    const std::size_t rows = std::size_t(a.B) * a.T, W = a.qkv_width(), MW = m.qkv_width(), O = a.out_width(),
                      hd = a.hd, kvw = std::size_t(a.KVH) * hd;
    std::vector<float> dq(rows * O), want_dq(rows * O), dkv(rows * 2 * kvw);
    std::vector<double> want_dkv(rows * 2 * kvw, 0.0);
    for (std::size_t r = 0; r < rows; ++r) {
      std::copy(got.dqkv.begin() + r * W, got.dqkv.begin() + r * W + O, dq.begin() + r * O);
      std::copy(want.dqkv.begin() + r * MW, want.dqkv.begin() + r * MW + O, want_dq.begin() + r * O);
      std::copy(got.dqkv.begin() + r * W + O, got.dqkv.begin() + (r + 1) * W, dkv.begin() + r * 2 * kvw);
      for (int h = 0; h < a.NH; ++h)
        for (std::size_t d = 0; d < hd; ++d)
          for (std::size_t part = 0; part < 2; ++part) {  // k, then v
            const std::size_t to = r * 2 * kvw + part * kvw + std::size_t(h / a.group()) * hd + d;
            want_dkv[to] += want.dqkv[r * MW + O + part * O + h * hd + d];
          }
    }
    EXPECT_TRUE(test::same_bits("dq", dq, want_dq));
    // The same fp32 terms summed in another order (one accumulator across the group against one per
    // head): within the fp32 tolerance against the cpu backend, which differs from both by order alone.
    std::vector<double> tol(want_dkv.size());
    for (std::size_t i = 0; i < tol.size(); ++i)
      tol[i] = kAtol * std::sqrt(double(a.group())) + kRtol * std::fabs(want_dkv[i]);
    EXPECT_TRUE(test::all_within("dk, dv", dkv, want_dkv, tol));
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaAttentionGqa, ::testing::ValuesIn(kGqaShapes),
                         [](const ::testing::TestParamInfo<AttentionShape>& info) {
                           return label(info.param);
                         });

// Through the cuda device's backend (Backend::attention_forward / attention_backward with an
// AttentionShape, as model/llama.cc calls them), for each arithmetic the device can be made with, and
// GPT-2's (B, T, C, NH) form on the same backend.
TEST_F(CudaAttention, TheCudaBackendRunsGroupedQueryHeadsAsTheCpuBackendDoes) {
  for (cuda::Attention math : {cuda::Attention::fp32, cuda::Attention::bf16}) {
    SCOPED_TRACE(math == cuda::Attention::fp32 ? "fp32" : "bf16");
    const double atol = math == cuda::Attention::fp32 ? kAtol : kBf16Atol,
                 rtol = math == cuda::Attention::fp32 ? kRtol : kBf16Rtol;
    auto dev = cuda::make_cuda_device({}, {cuda::Tf32::off, math});
    auto stream = dev->create_stream();
    Backend& be = dev->backend();
    for (const AttentionShape& a : {AttentionShape{2, 65, 6, 2, 64}, AttentionShape{1, 130, 8, 1, 128},
                                    AttentionShape{1, 70, 12, 12, 64}}) {
      SCOPED_TRACE(label(a));
      const Inputs in = random_inputs(a, 74);
      const Result want = run_cpu(in, a);
      Buffer<float> qkv(*dev, in.qkv.size(), "qkv"), dout(*dev, in.dout.size(), "dout"),
          out(*dev, in.dout.size(), "out"),
          saved(*dev, attention_saved_floats(dev->kind(), a, DType::f32), "saved"),
          scratch(*dev, attention_scratch_floats(dev->kind(), a, DType::f32), "scratch"),
          dqkv(*dev, in.qkv.size(), "dqkv");
      be.copy_async(*stream, qkv.data(), in.qkv.data(), qkv.bytes());
      be.copy_async(*stream, dout.data(), in.dout.data(), dout.bytes());
      be.memset_async(*stream, out.data(), 0xff, out.bytes());
      be.memset_async(*stream, dqkv.data(), 0xff, dqkv.bytes());
      be.attention_forward(*stream, out.data(), saved.data(), scratch.data(), qkv.data(), a);
      be.attention_backward(*stream, dqkv.data(), scratch.data(), dout.data(), qkv.data(), out.data(),
                            saved.data(), a);
      Result got{std::vector<float>(out.size()), {}, std::vector<float>(dqkv.size())};
      be.copy_async(*stream, got.out.data(), out.data(), out.bytes());
      be.copy_async(*stream, got.dqkv.data(), dqkv.data(), dqkv.bytes());
      stream->synchronize();
      expect_near_cpu(a, got, want, atol, rtol);

      if (a.KVH != a.NH) continue;
      // The multi-head form gives the same bits as its AttentionShape.
      be.attention_forward(*stream, out.data(), saved.data(), scratch.data(), qkv.data(), a.B, a.T,
                           a.out_width(), a.NH);
      be.attention_backward(*stream, dqkv.data(), scratch.data(), dout.data(), qkv.data(), out.data(),
                            saved.data(), a.B, a.T, a.out_width(), a.NH);
      Result again{std::vector<float>(out.size()), {}, std::vector<float>(dqkv.size())};
      be.copy_async(*stream, again.out.data(), out.data(), out.bytes());
      be.copy_async(*stream, again.dqkv.data(), dqkv.data(), dqkv.bytes());
      stream->synchronize();
      EXPECT_TRUE(test::same_bits("out", again.out, got.out));
      EXPECT_TRUE(test::same_bits("dqkv", again.dqkv, got.dqkv));
    }
  }
}

// lse[b,h,t] = log(sum_{t2 <= t} exp(q_t . k_t2 / sqrt(hs))), computed in double on the host. The
// device's is m + log(l) in fp32 (scores are fp32 dot products of hs <= 64 terms below 4, each off by
// ~1e-6; |lse| < 20): within 2e-5 absolute + 1e-5 relative.
TEST_F(CudaAttention, LogSumExpMatchesADoubleReference) {
  for (const Shape s : {Shape{2, 7, 24, 3}, Shape{1, 130, 256, 4}}) {
    SCOPED_TRACE(label(s));
    const Inputs in = random_inputs(s, 63);
    const Result got = run_cuda(in, s, stream_);
    const int hs = s.C / s.NH;
    const std::size_t C3 = std::size_t(3) * s.C;  // the multi-head qkv row: q, k, v blocks of C
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
  for (int kvh : {1, 2}) {
    try {
      cuda::attention_forward(cudaStream_t{}, View{}, nullptr, CView{}, AttentionShape{1, 4, 2, kvh, 257});
      FAIL() << "head size 257 was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("head size 257 is over the 256"), std::string::npos) << e.what();
    }
  }
  try {
    cuda::attention_backward(cudaStream_t{}, View{}, nullptr, CView{}, CView{}, CView{}, nullptr,
                             AttentionShape{1, 4, 4, 1, 300});
    FAIL() << "head size 300 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("head size 300 is over the 256"), std::string::npos) << e.what();
  }
}

TEST(CudaAttentionShape, TheBf16PathRefusesAHeadSizeOver128ByName) {
  try {
    cuda::attention_forward(cudaStream_t{}, View{}, nullptr, CView{}, AttentionShape{1, 4, 4, 2, 200},
                            cuda::AttentionMath::bf16_tensor_cores);
    FAIL() << "head size 200 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("head size 200 is over the 128"), std::string::npos) << e.what();
  }
}

TEST(CudaAttentionShape, QueryHeadsNotAMultipleOfTheKeyValueHeadsAreRefused) {
  for (cuda::AttentionMath math : {cuda::AttentionMath::fp32_simt, cuda::AttentionMath::bf16_tensor_cores}) {
    try {
      cuda::attention_backward(cudaStream_t{}, View{}, nullptr, CView{}, CView{}, CView{}, nullptr,
                               AttentionShape{1, 4, 6, 4, 64}, math);
      FAIL() << "NH = 6 over KVH = 4 was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("KVH must divide NH"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(
      cuda::attention_forward(cudaStream_t{}, View{}, nullptr, CView{}, AttentionShape{1, 4, 4, 0, 64}),
      Error);
}

}  // namespace
}  // namespace tz
