// Tests core/cuda/layernorm_kernels.cu against the CPU backend for every parameter dtype: forward's
// output, mean and rstd within 1e-5 (absolute and relative; both sum rows in float, in different
// orders), backward's dinp likewise and dw, db within 1e-5 of each channel's sum of magnitudes; and
// every output bitwise equal to itself on a second run. Widths from 3 (fewer channels than threads)
// to 12288. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/cuda/kernels.h"
#include "tests/common/random.h"
#include "tests/common/typed_params.h"
#include "tests/cuda/kernel_test_util.h"

namespace tz {
namespace {

using test::DeviceArray;
using test::DeviceParams;

class CudaLayerNorm : public test::CudaKernelTest {};

struct Shape {
  int N, C;
};
const Shape kShapes[] = {{67, 1600}, {5, 12288}, {1031, 777}, {4, 3}};

// Rows with different means (an offset per row) and spreads.
std::vector<float> rows_input(test::Rng& rng, int N, int C) {
  std::vector<float> x = rng.floats(std::size_t(N) * C, -2, 2);
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      x[std::size_t(n) * C + c] = x[std::size_t(n) * C + c] * (1 + n % 3) + 0.1f * (n % 7);
  return x;
}

TEST_F(CudaLayerNorm, ForwardMatchesTheCpuAndRepeatsItsBits) {
  test::Rng rng(80);
  for (DType t : test::kParamDtypes)
    for (const Shape& sh : kShapes) {
      SCOPED_TRACE(test::dtype_label(t) + " N " + std::to_string(sh.N) + " C " + std::to_string(sh.C));
      const std::size_t NC = std::size_t(sh.N) * sh.C;
      const std::vector<float> x = rows_input(rng, sh.N, sh.C);
      const test::TypedParams w(rng.floats(sh.C, 0.5, 1.5), t), b(rng.floats(sh.C, -0.5, 0.5), t);
      std::vector<float> want(NC), want_mean(sh.N), want_rstd(sh.N);
      cpu().layernorm_forward(cpu_stream(), want.data(), want_mean.data(), want_rstd.data(), x.data(),
                              w.view(), b.view(), sh.N, sh.C);

      DeviceParams d_w(w.view(), sh.C, stream_), d_b(b.view(), sh.C, stream_);
      DeviceArray<float> d_x(x, stream_), d_out(NC), d_mean(sh.N), d_rstd(sh.N);
      cuda::layernorm_forward(stream_, d_out.data(), d_mean.data(), d_rstd.data(), d_x.data(), d_w.view(),
                              d_b.view(), sh.N, sh.C);
      const std::vector<float> out = d_out.download(stream_), mean = d_mean.download(stream_),
                               rstd = d_rstd.download(stream_);
      EXPECT_TRUE(test::near("out", out, want, 1e-5, 1e-5));
      EXPECT_TRUE(test::near("mean", mean, want_mean, 1e-5, 1e-5));
      EXPECT_TRUE(test::near("rstd", rstd, want_rstd, 1e-5, 1e-5));

      cuda::layernorm_forward(stream_, d_out.data(), d_mean.data(), d_rstd.data(), d_x.data(), d_w.view(),
                              d_b.view(), sh.N, sh.C);
      EXPECT_TRUE(test::same_bits("out run twice", d_out.download(stream_), out));
      EXPECT_TRUE(test::same_bits("mean run twice", d_mean.download(stream_), mean));
      EXPECT_TRUE(test::same_bits("rstd run twice", d_rstd.download(stream_), rstd));
    }
}

TEST_F(CudaLayerNorm, BackwardAccumulatesTheCpuGradientsAndRepeatsItsBits) {
  test::Rng rng(90);
  for (DType t : test::kParamDtypes)
    for (const Shape& sh : kShapes) {
      SCOPED_TRACE(test::dtype_label(t) + " N " + std::to_string(sh.N) + " C " + std::to_string(sh.C));
      const int N = sh.N, C = sh.C;
      const std::size_t NC = std::size_t(N) * C;
      const std::vector<float> x = rows_input(rng, N, C);
      const test::TypedParams w(rng.floats(C, 0.5, 1.5), t), b(rng.floats(C, -0.5, 0.5), t);
      // mean and rstd from the CPU's forward: both backwards then read the same saved statistics.
      std::vector<float> out(NC), mean(N), rstd(N);
      cpu().layernorm_forward(cpu_stream(), out.data(), mean.data(), rstd.data(), x.data(), w.view(),
                              b.view(), N, C);
      const std::vector<float> dout = rng.floats(NC, -1, 1);
      const std::vector<float> dinp0 = rng.floats(NC, -1, 1), dw0 = rng.floats(C, -1, 1),
                               db0 = rng.floats(C, -1, 1);
      std::vector<float> want_dinp = dinp0, want_dw = dw0, want_db = db0;
      cpu().layernorm_backward(cpu_stream(), want_dinp.data(), want_dw.data(), want_db.data(), dout.data(),
                               x.data(), w.view(), mean.data(), rstd.data(), N, C);
      std::vector<double> tol_dw(C), tol_db(C);
      for (int c = 0; c < C; ++c) {
        double mw = std::fabs(dw0[c]), mb = std::fabs(db0[c]);
        for (int n = 0; n < N; ++n) {
          const std::size_t i = std::size_t(n) * C + c;
          mw += std::fabs((double(x[i]) - mean[n]) * rstd[n] * dout[i]);
          mb += std::fabs(dout[i]);
        }
        tol_dw[c] = 1e-5 * mw;
        tol_db[c] = 1e-5 * mb;
      }

      DeviceParams d_w(w.view(), C, stream_);
      DeviceArray<float> d_x(x, stream_), d_dout(dout, stream_), d_mean(mean, stream_), d_rstd(rstd, stream_);
      DeviceArray<float> d_dinp(dinp0, stream_), d_dw(dw0, stream_), d_db(db0, stream_);
      auto run = [&] {
        cuda::layernorm_backward(stream_, d_dinp.data(), d_dw.data(), d_db.data(), d_dout.data(), d_x.data(),
                                 d_w.view(), d_mean.data(), d_rstd.data(), N, C);
      };
      run();
      const std::vector<float> dinp = d_dinp.download(stream_), dw = d_dw.download(stream_),
                               db = d_db.download(stream_);
      EXPECT_TRUE(test::near("dinp", dinp, want_dinp, 1e-5, 1e-5));
      EXPECT_TRUE(test::within("dw", dw, want_dw, tol_dw));
      EXPECT_TRUE(test::within("db", db, want_db, tol_db));

      d_dinp.upload(dinp0, stream_);
      d_dw.upload(dw0, stream_);
      d_db.upload(db0, stream_);
      run();
      EXPECT_TRUE(test::same_bits("dinp run twice", d_dinp.download(stream_), dinp));
      EXPECT_TRUE(test::same_bits("dw run twice", d_dw.download(stream_), dw));
      EXPECT_TRUE(test::same_bits("db run twice", d_db.download(stream_), db));
    }
}

TEST_F(CudaLayerNorm, RefusesWeightAndBiasOfDifferentDtypes) {
  DeviceArray<float> buf(16);
  EXPECT_THROW(cuda::layernorm_forward(stream_, buf.data(), buf.data(), buf.data(), buf.data(),
                                       CView{buf.data(), DType::f32}, CView{buf.data(), DType::bf16}, 1, 4),
               Error);
}

}  // namespace
}  // namespace tz
