// Tests core/cuda/llama_kernels.cu (RMSNorm, rotary embedding, SwiGLU) and the token embedding without a
// position table (elementwise_kernels.cu) against the CPU backend on the same inputs: bitwise for the
// elementwise ops (rope, swiglu, the embedding: the same TZ_HOST_DEVICE math, no FMA contraction on
// either side), RMSNorm within stated tolerances (row sums in another order) and bitwise equal to itself
// on a second run; rope's inverse undoes it; and the cuda backend's table reaches each kernel. Skips
// without a GPU (the argument checks run without one).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/cuda/cuda_device.h"
#include "core/cuda/kernels.h"
#include "core/cuda/launch_config.h"
#include "core/device.h"
#include "tests/common/random.h"
#include "tests/common/typed_params.h"
#include "tests/cuda/kernel_test_util.h"

namespace tz {
namespace {

using test::DeviceArray;
using test::DeviceParams;

class CudaLlamaKernels : public test::CudaKernelTest {};

struct NormShape {
  int N, C;
};
// Fewer channels than a warp, a non-multiple of 32 under and over 1024, Llama 3.2 1B's 2048 and 3B's
// 3072, and 70B's 8192.
const NormShape kNormShapes[] = {{4, 3}, {1031, 777}, {67, 2048}, {5, 4099}, {9, 3072}, {3, 8192}};

// Rows with different scales (an RMSNorm output does not depend on the row's scale; rstd does).
std::vector<float> rows_input(test::Rng& rng, int N, int C) {
  std::vector<float> x = rng.floats(std::size_t(N) * C, -2, 2);
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c) x[std::size_t(n) * C + c] *= 0.25f * float(1 + n % 5);
  return x;
}

std::string norm_label(DType t, const NormShape& sh, float eps) {
  return test::dtype_label(t) + " N " + std::to_string(sh.N) + " C " + std::to_string(sh.C) + " eps " +
         std::to_string(eps);
}

TEST_F(CudaLlamaKernels, RmsNormForwardMatchesTheCpuAndRepeatsItsBits) {
  test::Rng rng(100);
  for (DType t : test::kParamDtypes)
    for (const NormShape& sh : kNormShapes)
      for (float eps : {1e-5f, 1e-6f}) {
        SCOPED_TRACE(norm_label(t, sh, eps));
        const std::size_t NC = std::size_t(sh.N) * sh.C;
        const std::vector<float> x = rows_input(rng, sh.N, sh.C);
        const test::TypedParams w(rng.floats(sh.C, 0.5, 1.5), t);
        std::vector<float> want(NC), want_rstd(sh.N);
        cpu().rmsnorm_forward(cpu_stream(), want.data(), want_rstd.data(), x.data(), w.view(), sh.N, sh.C,
                              eps);

        DeviceParams d_w(w.view(), sh.C, stream_);
        DeviceArray<float> d_x(x, stream_), d_out(NC), d_rstd(sh.N);
        d_out.fill_bytes(0xff, stream_);
        d_rstd.fill_bytes(0xff, stream_);
        auto run = [&] {
          cuda::rmsnorm_forward(stream_, d_out.data(), d_rstd.data(), d_x.data(), d_w.view(), sh.N, sh.C,
                                eps);
        };
        run();
        const std::vector<float> out = d_out.download(stream_), rstd = d_rstd.download(stream_);
        // Both sum the row's squares in float, in different orders: rstd and out within 1e-5.
        EXPECT_TRUE(test::near("out", out, want, 1e-5, 1e-5));
        EXPECT_TRUE(test::near("rstd", rstd, want_rstd, 1e-5, 1e-5));
        run();
        EXPECT_TRUE(test::same_bits("out run twice", d_out.download(stream_), out));
        EXPECT_TRUE(test::same_bits("rstd run twice", d_rstd.download(stream_), rstd));
      }
}

TEST_F(CudaLlamaKernels, RmsNormBackwardAccumulatesTheCpuGradientsAndRepeatsItsBits) {
  test::Rng rng(101);
  for (DType t : test::kParamDtypes)
    for (const NormShape& sh : kNormShapes) {
      SCOPED_TRACE(norm_label(t, sh, 1e-5f));
      const int N = sh.N, C = sh.C;
      const std::size_t NC = std::size_t(N) * C;
      const std::vector<float> x = rows_input(rng, N, C);
      const test::TypedParams w(rng.floats(C, 0.5, 1.5), t);
      // rstd from the CPU's forward: both backwards read the same saved statistics.
      std::vector<float> out(NC), rstd(N);
      cpu().rmsnorm_forward(cpu_stream(), out.data(), rstd.data(), x.data(), w.view(), N, C, 1e-5f);
      const std::vector<float> dout = rng.floats(NC, -1, 1);
      const std::vector<float> dinp0 = rng.floats(NC, -1, 1), dw0 = rng.floats(C, -1, 1);
      std::vector<float> want_dinp = dinp0, want_dw = dw0;
      cpu().rmsnorm_backward(cpu_stream(), want_dinp.data(), want_dw.data(), dout.data(), x.data(), w.view(),
                             rstd.data(), N, C);
      // dw: the same products summed over rows in another order, within 1e-5 of the channel's sum of
      // magnitudes (as layernorm's dw).
      std::vector<double> tol_dw(C);
      for (int c = 0; c < C; ++c) {
        double m = std::fabs(dw0[c]);
        for (int n = 0; n < N; ++n) {
          const std::size_t i = std::size_t(n) * C + c;
          m += std::fabs(double(dout[i]) * x[i] * rstd[n]);
        }
        tol_dw[c] = 1e-5 * m;
      }

      DeviceParams d_w(w.view(), C, stream_);
      DeviceArray<float> d_x(x, stream_), d_dout(dout, stream_), d_rstd(rstd, stream_);
      DeviceArray<float> d_dinp(dinp0, stream_), d_dw(dw0, stream_);
      auto run = [&] {
        cuda::rmsnorm_backward(stream_, d_dinp.data(), d_dw.data(), d_dout.data(), d_x.data(), d_w.view(),
                               d_rstd.data(), N, C);
      };
      run();
      const std::vector<float> dinp = d_dinp.download(stream_), dw = d_dw.download(stream_);
      // dinp: the row's dot product summed in another order, then the CPU's per-element arithmetic.
      EXPECT_TRUE(test::near("dinp", dinp, want_dinp, 1e-5, 1e-5));
      EXPECT_TRUE(test::within("dw", dw, want_dw, tol_dw));

      d_dinp.upload(dinp0, stream_);
      d_dw.upload(dw0, stream_);
      run();
      EXPECT_TRUE(test::same_bits("dinp run twice", d_dinp.download(stream_), dinp));
      EXPECT_TRUE(test::same_bits("dw run twice", d_dw.download(stream_), dw));
    }
}

// Llama's table for T positions of head size hd: cos [T, hd/2] then sin [T, hd/2] of t * theta^(-2i/hd).
std::vector<float> rope_table(int T, int hd, double theta) {
  const int half = hd / 2;
  std::vector<float> table(std::size_t(2) * T * half);
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < half; ++i) {
      const double angle = t * std::pow(theta, -2.0 * i / hd);
      table[std::size_t(t) * half + i] = float(std::cos(angle));
      table[std::size_t(T + t) * half + i] = float(std::sin(angle));
    }
  return table;
}

// Rows of a grouped-query qkv (NH query heads, KVH key-value heads): rope turns q (heads NH from column
// 0) and k (heads KVH from column NH * hd), never v. N = B * T rows, so rows past T wrap to position 0.
struct RopeCase {
  int B, T, NH, KVH, hd;
};
const RopeCase kRopeCases[] = {{3, 37, 8, 2, 64}, {2, 130, 4, 1, 128}, {1, 5, 3, 3, 2}, {2, 64, 6, 2, 96}};

TEST_F(CudaLlamaKernels, RopeForwardAndInverseGiveTheCpuBitsAndInverseUndoesForward) {
  test::Rng rng(102);
  for (const RopeCase& rc : kRopeCases) {
    SCOPED_TRACE("B " + std::to_string(rc.B) + " T " + std::to_string(rc.T) + " NH " + std::to_string(rc.NH) +
                 " KVH " + std::to_string(rc.KVH) + " hd " + std::to_string(rc.hd));
    const int N = rc.B * rc.T, stride = (rc.NH + 2 * rc.KVH) * rc.hd;
    const std::vector<float> table = rope_table(rc.T, rc.hd, 500000.0);
    const std::vector<float> x0 = rng.floats(std::size_t(N) * stride, -2, 2);
    DeviceArray<float> d_table(table, stream_), d_x(x0, stream_);
    // Forward on q then k, as a model's forward does; then the inverse (backward's) on both.
    std::vector<float> want = x0;
    for (bool inverse : {false, true}) {
      SCOPED_TRACE(inverse ? "inverse" : "forward");
      cpu().rope(cpu_stream(), want.data(), table.data(), N, rc.T, rc.NH, rc.hd, stride, inverse);
      cpu().rope(cpu_stream(), want.data() + std::size_t(rc.NH) * rc.hd, table.data(), N, rc.T, rc.KVH, rc.hd,
                 stride, inverse);
      cuda::rope(stream_, d_x.data(), d_table.data(), N, rc.T, rc.NH, rc.hd, stride, inverse);
      cuda::rope(stream_, d_x.data() + std::size_t(rc.NH) * rc.hd, d_table.data(), N, rc.T, rc.KVH, rc.hd,
                 stride, inverse);
      const std::vector<float> got = d_x.download(stream_);
      // Every element, the v columns (and the pairs' partners) included.
      EXPECT_TRUE(test::same_bits("rope", got, want));
      if (!inverse) {
        std::size_t moved = 0;
        for (std::size_t i = 0; i < got.size(); ++i) moved += got[i] != x0[i] ? 1 : 0;
        EXPECT_GT(moved, got.size() / 4) << "rope left q and k as they were";
      }
    }
    // Rotating back by the same angles gives the input within a few roundings: each rotation rounds
    // its two products and their sum, and cos^2 + sin^2 is 1 within the table's rounding.
    EXPECT_TRUE(test::near("inverse of forward", d_x.download(stream_), x0, 2e-6, 2e-6));
  }
}

// Gates where sigmoid's exp clamps, overflows or sees a NaN, then random values.
std::vector<float> gate_up_input(test::Rng& rng, int N, int I) {
  std::vector<float> v = rng.floats(std::size_t(N) * 2 * I, -8, 8);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float specials[] = {0.0f,   -0.0f,  nan,     inf,    -inf,  88.7f,
                            -87.3f, 100.0f, -100.0f, 1e-20f, 3e38f, -3e38f};
  int k = 0;
  for (float s : specials) {
    v[k] = s;                  // a gate of row 0
    v[I + k + 1] = -s * 0.5f;  // an up of row 0
    ++k;
  }
  return v;
}

TEST_F(CudaLlamaKernels, SwigluForwardAndBackwardGiveTheCpuBits) {
  // N * I past one grid lap of the grid-stride loops; I not a multiple of 32.
  constexpr int N = 1031, I = 2053;
  static_assert(std::size_t(N) * I > cuda::kGridLap, "more than one lap");
  test::Rng rng(103);
  const std::vector<float> gate_up = gate_up_input(rng, N, I);
  const std::vector<float> dout = rng.floats(std::size_t(N) * I, -2, 2);
  std::vector<float> want_out(std::size_t(N) * I), want_d(gate_up.size());
  cpu().swiglu_forward(cpu_stream(), want_out.data(), gate_up.data(), N, I);
  cpu().swiglu_backward(cpu_stream(), want_d.data(), gate_up.data(), dout.data(), N, I);

  DeviceArray<float> d_gu(gate_up, stream_), d_dout(dout, stream_), d_out(want_out.size() + 1),
      d_d(want_d.size());
  std::vector<float> sentinel(want_out.size() + 1, 7.0f);
  d_out.upload(sentinel, stream_);
  d_d.fill_bytes(0xff, stream_);
  cuda::swiglu_forward(stream_, d_out.data(), d_gu.data(), N, I);
  cuda::swiglu_backward(stream_, d_d.data(), d_gu.data(), d_dout.data(), N, I);
  std::vector<float> out = d_out.download(stream_);
  EXPECT_EQ(out.back(), 7.0f) << "swiglu_forward wrote past N * I";
  out.pop_back();
  EXPECT_TRUE(test::same_bits("swiglu forward", out, want_out));
  EXPECT_TRUE(test::same_bits("swiglu backward", d_d.download(stream_), want_d));
}

TEST_F(CudaLlamaKernels, EncoderWithoutAPositionTableGivesTheCpuBitsForEveryParamDtype) {
  constexpr int B = 3, T = 129, C = 777, V = 50;  // repeated tokens: dwte's adds must land in order
  test::Rng rng(104);
  std::vector<std::int32_t> tokens(B * T);
  for (auto& tok : tokens) tok = rng.below(V);
  DeviceArray<std::int32_t> d_tokens(tokens, stream_);
  for (DType t : test::kParamDtypes) {
    SCOPED_TRACE(test::dtype_label(t));
    const test::TypedParams wte(rng.floats(std::size_t(V) * C, -1, 1), t);
    const CView none{nullptr, t};
    std::vector<float> want(std::size_t(B) * T * C);
    cpu().encoder_forward(cpu_stream(), want.data(), tokens.data(), wte.view(), none, B, T, C);
    DeviceParams d_wte(wte.view(), std::size_t(V) * C, stream_);
    DeviceArray<float> d_out(want.size());
    d_out.fill_bytes(0xff, stream_);
    cuda::encoder_forward(stream_, d_out.data(), d_tokens.data(), d_wte.view(), none, B, T, C);
    EXPECT_TRUE(test::same_bits("encoder_forward", d_out.download(stream_), want));
  }
  // Backward without dwpe: only dwte, with the CPU's order of adds per token row.
  const std::vector<float> dout = rng.floats(std::size_t(B) * T * C, -1, 1);
  const std::vector<float> dwte0 = rng.floats(std::size_t(V) * C, -1, 1);
  std::vector<float> want_wte = dwte0;
  cpu().encoder_backward(cpu_stream(), want_wte.data(), nullptr, dout.data(), tokens.data(), B, T, C);
  DeviceArray<float> d_dout(dout, stream_), d_wte(dwte0, stream_);
  cuda::encoder_backward(stream_, d_wte.data(), nullptr, d_dout.data(), d_tokens.data(), B, T, C);
  EXPECT_TRUE(test::same_bits("dwte", d_wte.download(stream_), want_wte));
}

TEST_F(CudaLlamaKernels, EmptyLaunchesDoNothingAndSucceed) {
  cuda::rmsnorm_forward(stream_, View{}, nullptr, CView{}, CView{nullptr, DType::bf16}, 0, 64, 1e-5f);
  cuda::rmsnorm_backward(stream_, View{}, nullptr, CView{}, CView{}, CView{nullptr, DType::f32}, nullptr, 0,
                         64);
  cuda::rope(stream_, View{}, nullptr, 0, 4, 2, 64, 128, false);
  cuda::swiglu_forward(stream_, View{}, CView{}, 0, 10);
  cuda::swiglu_backward(stream_, View{}, CView{}, CView{}, 7, 0);
  EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
}

// The cuda backend's table (core/cuda/cuda_backend.cc) reaches each kernel with its arguments in place:
// the backend's results are the kernels' bits.
TEST_F(CudaLlamaKernels, TheCudaBackendRunsTheKernels) {
  constexpr int N = 70, T = 35, C = 96, I = 80, heads = 3, hd = 32;
  test::Rng rng(105);
  auto dev = cuda::make_cuda_device({});
  auto stream = dev->create_stream();
  Backend& be = dev->backend();
  const std::vector<float> x = rows_input(rng, N, C), w = rng.floats(C, 0.5, 1.5), dout = rng.floats(N * C),
                           gate_up = rng.floats(std::size_t(N) * 2 * I, -4, 4),
                           table = rope_table(T, hd, 1e4);
  DeviceArray<float> k_x(x, stream_), k_w(w, stream_), k_dout(dout, stream_), k_gu(gate_up, stream_),
      k_table(table, stream_), k_out(N * C), k_rstd(N), k_dinp(N * C), k_dw(C), k_rope(x, stream_),
      k_sw(N * I), k_dgu(N * 2 * I);
  k_dinp.fill_bytes(0, stream_);
  k_dw.fill_bytes(0, stream_);
  cuda::rmsnorm_forward(stream_, k_out.data(), k_rstd.data(), k_x.data(), cview(k_w.data()), N, C, 1e-5f);
  cuda::rmsnorm_backward(stream_, k_dinp.data(), k_dw.data(), k_dout.data(), k_x.data(), cview(k_w.data()),
                         k_rstd.data(), N, C);
  cuda::rope(stream_, k_rope.data() + hd, k_table.data(), N, T, heads - 1, hd, C, true);
  cuda::swiglu_forward(stream_, k_sw.data(), k_gu.data(), N, I);
  cuda::swiglu_backward(stream_, k_dgu.data(), k_gu.data(), k_dout.data(), N, I);

  Buffer<float> b_x(*dev, x.size(), "x"), b_w(*dev, w.size(), "w"), b_dout(*dev, dout.size(), "dout"),
      b_gu(*dev, gate_up.size(), "gate_up"), b_table(*dev, table.size(), "table"), b_out(*dev, N * C, "out"),
      b_rstd(*dev, N, "rstd"), b_dinp(*dev, N * C, "dinp"), b_dw(*dev, C, "dw"),
      b_rope(*dev, x.size(), "rope"), b_sw(*dev, N * I, "swiglu"), b_dgu(*dev, N * 2 * I, "dswiglu");
  Stream& s = *stream;
  be.copy_async(s, b_x.data(), x.data(), b_x.bytes());
  be.copy_async(s, b_rope.data(), x.data(), b_rope.bytes());
  be.copy_async(s, b_w.data(), w.data(), b_w.bytes());
  be.copy_async(s, b_dout.data(), dout.data(), b_dout.bytes());
  be.copy_async(s, b_gu.data(), gate_up.data(), b_gu.bytes());
  be.copy_async(s, b_table.data(), table.data(), b_table.bytes());
  be.memset_async(s, b_dinp.data(), 0, b_dinp.bytes());
  be.memset_async(s, b_dw.data(), 0, b_dw.bytes());
  be.rmsnorm_forward(s, b_out.data(), b_rstd.data(), b_x.data(), cview(b_w.data()), N, C, 1e-5f);
  be.rmsnorm_backward(s, b_dinp.data(), b_dw.data(), b_dout.data(), b_x.data(), cview(b_w.data()),
                      b_rstd.data(), N, C);
  be.rope(s, b_rope.data() + hd, b_table.data(), N, T, heads - 1, hd, C, true);
  be.swiglu_forward(s, b_sw.data(), b_gu.data(), N, I);
  be.swiglu_backward(s, b_dgu.data(), b_gu.data(), b_dout.data(), N, I);
  auto read = [&](Buffer<float>& b) {
    std::vector<float> h(b.size());
    be.copy_async(s, h.data(), b.data(), b.bytes());
    s.synchronize();
    return h;
  };
  EXPECT_TRUE(test::same_bits("rmsnorm out", read(b_out), k_out.download(stream_)));
  EXPECT_TRUE(test::same_bits("rmsnorm rstd", read(b_rstd), k_rstd.download(stream_)));
  EXPECT_TRUE(test::same_bits("rmsnorm dinp", read(b_dinp), k_dinp.download(stream_)));
  EXPECT_TRUE(test::same_bits("rmsnorm dw", read(b_dw), k_dw.download(stream_)));
  EXPECT_TRUE(test::same_bits("rope", read(b_rope), k_rope.download(stream_)));
  EXPECT_TRUE(test::same_bits("swiglu out", read(b_sw), k_sw.download(stream_)));
  EXPECT_TRUE(test::same_bits("swiglu dgate_up", read(b_dgu), k_dgu.download(stream_)));
}

// Arguments are checked on the host before anything reaches a device, so these run without one.
TEST(CudaLlamaArguments, RopeRefusesAnOddHeadSizeAndHeadsWiderThanTheRow) {
  EXPECT_THROW(cuda::rope(cudaStream_t{}, View{}, nullptr, 4, 4, 2, 63, 128, false), Error);
  try {
    cuda::rope(cudaStream_t{}, View{}, nullptr, 4, 4, 3, 64, 128, false);
    FAIL() << "3 heads of 64 in rows of 128 were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("3 heads of 64"), std::string::npos) << e.what();
  }
}

TEST(CudaLlamaArguments, RmsNormRefusesAnIntegerWeightByName) {
  try {
    cuda::rmsnorm_forward(cudaStream_t{}, View{}, nullptr, CView{}, CView{nullptr, DType::i32}, 1, 4, 1e-5f);
    FAIL() << "an int32 weight was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("int32"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tz
