// Tests the CUDA backend's gemm (core/cuda/cublaslt_gemm.h) against the CPU backend's on the same
// inputs: every Trans combination, f32/bf16/f16 inputs, Accumulate no and yes, odd and model-sized
// shapes, pointers of every alignment. Skips when no CUDA device is usable.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/backend.h"
#include "core/cuda/cuda_device.h"
#include "core/cuda/cuda_runtime.h"
#include "core/device.h"
#include "tests/common/compare.h"
#include "tests/common/random.h"
#include "tests/common/stream.h"
#include "tests/common/typed_params.h"

namespace tz {
namespace {

struct Shape {
  int M, N, K;
};
// Degenerate, odd (no dimension a multiple of 8), a GPT-2 projection (K = 3 x 768) and the logits
// (N = GPT-2's padded vocabulary).
constexpr Shape kShapes[] = {{1, 1, 1}, {7, 13, 5}, {64, 768, 2304}, {33, 50304, 64}};
constexpr Trans kTrans[] = {Trans::no, Trans::yes};
constexpr Accumulate kAcc[] = {Accumulate::no, Accumulate::yes};

const char* name(Trans t) { return t == Trans::yes ? "T" : "N"; }

class CudaGemm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << cuda::unavailable_reason();
    dev_ = cuda::make_cuda_device({});
    stream_ = dev_->create_stream();
  }

  // Runs C (+)= op(A) op(B) on both backends. `skew` elements of offset on every device pointer make
  // them less aligned than cudaMalloc's 256 bytes (a view inside a parameter arena). The tolerance:
  // each backend's fp32 sum of K exact products (fp32 products are rounded once; bf16 and f16 products
  // are exact in fp32) plus the accumulate add is within (K + 1) * 2^-24 * m of the exact value, where
  // m = sum_k |a_k b_k| + |C0|; two such results are within 2 (K + 2) 2^-24 m of each other (relative
  // to m: 3.6e-7 for K = 1, 7.9e-6 for K = 64, 2.7e-4 for K = 2304). TF32 rounds each input to 11
  // significant bits first: 2^-10 m more.
  void check(Shape s, Trans ta, Trans tb, DType dtype, Accumulate acc, test::Rng& rng, std::size_t skew = 0,
             cuda::Tf32 tf32 = cuda::Tf32::off) {
    SCOPED_TRACE(testing::Message() << "M=" << s.M << " N=" << s.N << " K=" << s.K << " op=" << name(ta)
                                    << name(tb) << " " << dtype_name(dtype)
                                    << (acc == Accumulate::yes ? " accumulate" : "")
                                    << (skew ? " skewed" : "") << (tf32 == cuda::Tf32::on ? " tf32" : ""));
    const std::size_t M = s.M, N = s.N, K = s.K;
    test::TypedParams A(rng.floats(M * K), dtype), B(rng.floats(K * N), dtype);
    const std::vector<float> C0 = rng.floats(M * N, -2, 2);

    std::vector<float> want = C0;
    if (acc == Accumulate::no) std::fill(want.begin(), want.end(), std::numeric_limits<float>::quiet_NaN());
    auto cpu = make_cpu_backend();
    cpu->gemm(test::cpu_stream(), ta, tb, s.M, s.N, s.K, A.view(), B.view(), want.data(), acc);

    std::unique_ptr<Device> tf32_dev;
    Device& dev = tf32 == cuda::Tf32::on ? *(tf32_dev = cuda::make_cuda_device({}, {tf32})) : *dev_;
    auto stream = tf32 == cuda::Tf32::on ? dev.create_stream() : nullptr;
    Stream& st = stream ? *stream : *stream_;
    Backend& be = dev.backend();
    const std::size_t es = dtype_size(dtype);
    Buffer<std::byte> a(dev, (M * K + skew) * es, "A"), b(dev, (K * N + skew) * es, "B");
    Buffer<float> c(dev, M * N + skew, "C");
    be.copy_async(st, a.data() + skew * es, A.view().ptr, M * K * es);
    be.copy_async(st, b.data() + skew * es, B.view().ptr, K * N * es);
    if (acc == Accumulate::yes) {
      be.copy_async(st, c.data() + skew, C0.data(), M * N * sizeof(float));
    } else {
      be.memset_async(st, c.data() + skew, 0xFF, M * N * sizeof(float));  // NaN: must not be read
    }
    be.gemm(st, ta, tb, s.M, s.N, s.K, {a.data() + skew * es, dtype}, {b.data() + skew * es, dtype},
            c.data() + skew, acc);
    std::vector<float> got(M * N);
    be.copy_async(st, got.data(), c.data() + skew, got.size() * sizeof(float));
    st.synchronize();

    // m per element from op(A) as [M,K] and op(B)^T as [N,K] (contiguous rows for the inner loop).
    const auto& av = A.values();
    const auto& bv = B.values();
    std::vector<double> opa(M * K), opbt(N * K);
    for (std::size_t m = 0; m < M; ++m)
      for (std::size_t k = 0; k < K; ++k)
        opa[m * K + k] = std::fabs(ta == Trans::no ? av[m * K + k] : av[k * M + m]);
    for (std::size_t n = 0; n < N; ++n)
      for (std::size_t k = 0; k < K; ++k)
        opbt[n * K + k] = std::fabs(tb == Trans::no ? bv[k * N + n] : bv[n * K + k]);
    const double rel =
        2.0 * double(K + 2) * std::ldexp(1.0, -24) + (tf32 == cuda::Tf32::on ? std::ldexp(1.0, -10) : 0);
    std::vector<double> wantd(M * N), tol(M * N);
    for (std::size_t m = 0; m < M; ++m) {
      for (std::size_t n = 0; n < N; ++n) {
        double mag = acc == Accumulate::yes ? std::fabs(C0[m * N + n]) : 0.0;
        const double* x = &opa[m * K];
        const double* y = &opbt[n * K];
        for (std::size_t k = 0; k < K; ++k) mag += x[k] * y[k];
        wantd[m * N + n] = want[m * N + n];
        tol[m * N + n] = rel * mag;
      }
    }
    EXPECT_TRUE(test::all_within("C", got, wantd, tol));
  }

  void every_case(DType dtype) {
    test::Rng rng(11 + int(dtype));
    for (Shape s : kShapes)
      for (Trans ta : kTrans)
        for (Trans tb : kTrans)
          for (Accumulate acc : kAcc) check(s, ta, tb, dtype, acc, rng);
  }

  std::unique_ptr<Device> dev_;
  std::unique_ptr<Stream> stream_;
};

TEST_F(CudaGemm, Fp32InputsWithoutTf32MatchTheCpuForEveryTransposeShapeAndAccumulate) {
  every_case(DType::f32);
}

TEST_F(CudaGemm, Bf16InputsMatchTheCpuForEveryTransposeShapeAndAccumulate) { every_case(DType::bf16); }

TEST_F(CudaGemm, Fp16InputsMatchTheCpuForEveryTransposeShapeAndAccumulate) { every_case(DType::f16); }

// One element of skew leaves 4-byte (f32) or 2-byte (bf16, f16) alignment: cuBLASLt must be asked for an
// algorithm that accepts it (and the plan for the aligned pointers must not be reused).
TEST_F(CudaGemm, PointersAlignedToOneElementStillGiveTheCpuResult) {
  test::Rng rng(5);
  for (DType dtype : test::kParamDtypes)
    for (Trans ta : kTrans)
      for (Trans tb : kTrans) {
        check({7, 13, 5}, ta, tb, dtype, Accumulate::yes, rng, 0);
        check({7, 13, 5}, ta, tb, dtype, Accumulate::yes, rng, 1);
        check({33, 96, 64}, ta, tb, dtype, Accumulate::no, rng, 3);
      }
}

TEST_F(CudaGemm, Tf32WhenAskedForStaysWithinTf32Rounding) {
  test::Rng rng(9);
  check({64, 768, 2304}, Trans::no, Trans::yes, DType::f32, Accumulate::yes, rng, 0, cuda::Tf32::on);
}

TEST_F(CudaGemm, AnEmptySumZeroesOrKeepsC) {
  Backend& be = dev_->backend();
  Buffer<float> c(*dev_, 6, "C");
  Buffer<float> a(*dev_, 1, "A"), b(*dev_, 1, "B");
  std::vector<float> ones(6, 1.0f), got(6);
  be.copy_async(*stream_, c.data(), ones.data(), c.bytes());
  be.gemm(*stream_, Trans::no, Trans::no, 2, 3, 0, cview(a.data()), cview(b.data()), c.data(),
          Accumulate::yes);
  be.copy_async(*stream_, got.data(), c.data(), c.bytes());
  stream_->synchronize();
  EXPECT_EQ(got, ones);
  be.gemm(*stream_, Trans::no, Trans::no, 2, 3, 0, cview(a.data()), cview(b.data()), c.data(),
          Accumulate::no);
  be.copy_async(*stream_, got.data(), c.data(), c.bytes());
  stream_->synchronize();
  EXPECT_EQ(got, std::vector<float>(6, 0.0f));
}

}  // namespace
}  // namespace tz
