// Tests core/cuda/cudnn_attention.h, cuDNN's fused flash attention: out and dqkv against the cpu backend and
// the row log-sum-exp against the fp32 kernels, element by element, on bf16 and fp16 activations, head sizes
// 64 and 128, multi-head, grouped-query (NH 8 over KVH 2) and multi-query heads, B of 1 and 2, T of 1024,
// multiples of 128 and T not a multiple of 64; runs repeating bit for bit; each plan's workspace within the
// bound the memory plan reserves (core/attention_scratch.h); an undersized scratch refused naming both
// sizes; and through the cuda backend: cuDNN where it runs, the bf16 kernels elsewhere, and without the
// library the bf16 kernels' bits with one line saying why. The rules (which shapes, versions and scratch
// sizes cuDNN gets) run without a GPU; the rest skips without one, or without cuDNN 9, or off Hopper.
#include "core/cuda/cudnn_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/attention_scratch.h"
#include "core/backend.h"
#include "core/cuda/cuda_device.h"
#include "core/cuda/cudnn_api.h"
#include "core/cuda/kernels.h"
#include "core/device.h"
#include "tests/common/compare.h"
#include "tests/common/error_message.h"
#include "tests/common/random.h"
#include "tests/cuda/kernel_test_util.h"

namespace tz {
namespace {

using cuda::CudnnAttention;
using test::DeviceArray;

std::string label(const AttentionShape& a) {
  return "B" + std::to_string(a.B) + "_T" + std::to_string(a.T) + "_NH" + std::to_string(a.NH) + "_KVH" +
         std::to_string(a.KVH) + "_hd" + std::to_string(a.hd);
}

// ---- the rules, without a GPU ----

TEST(CudnnAttentionRules, CudnnRunsBf16AndFp16WithHeadSizesThatAreMultiplesOf8UpTo128) {
  const AttentionShape ok{2, 100, 8, 2, 64};
  EXPECT_EQ(CudnnAttention::not_cudnns(ok, DType::bf16), "");
  EXPECT_EQ(CudnnAttention::not_cudnns(ok, DType::f16), "");
  EXPECT_EQ(CudnnAttention::not_cudnns(AttentionShape{1, 2, 4, 1, 128}, DType::bf16), "");
  EXPECT_NE(CudnnAttention::not_cudnns(ok, DType::f32).find("bf16 and fp16 activations, not f"),
            std::string::npos)
      << CudnnAttention::not_cudnns(ok, DType::f32);
  for (int hd : {4, 60, 136, 256})
    EXPECT_NE(CudnnAttention::not_cudnns(AttentionShape{1, 64, 2, 2, hd}, DType::bf16)
                  .find("head size " + std::to_string(hd) + " is not a multiple of 8 up to 128"),
              std::string::npos);
  EXPECT_NE(CudnnAttention::not_cudnns(AttentionShape{1, 1, 2, 2, 64}, DType::bf16).find("T = 1"),
            std::string::npos);
}

// cudnn-frontend refuses 9.10.0 and 9.10.1's backward, and up to 9.15.0 adds a padding mask for T not a
// multiple of 128 (NaN gradients otherwise, its issue #160), which tierzero does not build: such a shape
// keeps the kernels there.
TEST(CudnnAttentionRules, VersionsWithKnownBugsForTheShapeAreRefusedByName) {
  const AttentionShape t100{1, 100, 8, 2, 64}, t1024{1, 1024, 8, 2, 64};
  EXPECT_NE(CudnnAttention::version_refuses(91000, t1024).find("cuDNN 9.10.0 has known bugs"),
            std::string::npos);
  EXPECT_NE(CudnnAttention::version_refuses(91001, t1024).find("9.10.1"), std::string::npos);
  EXPECT_NE(CudnnAttention::version_refuses(91500, t100).find("T not a multiple of 128"), std::string::npos);
  EXPECT_NE(CudnnAttention::version_refuses(90100, t100).find("cuDNN 9.1.0"), std::string::npos);
  EXPECT_EQ(CudnnAttention::version_refuses(91500, t1024), "");
  EXPECT_EQ(CudnnAttention::version_refuses(91501, t100), "");
  EXPECT_EQ(CudnnAttention::version_refuses(91900, t100), "");
  EXPECT_EQ(CudnnAttention::version_refuses(90600, t1024), "");
}

// The workspace goes after the row sums at the next 256-byte boundary; a plan needing more than is left is
// refused with both sizes.
TEST(CudnnAttentionRules, AnUndersizedScratchIsRefusedNamingBothSizes) {
  const std::uintptr_t base = 0x10000;
  EXPECT_EQ(cuda::cudnn_workspace_offset(base, 4096, 100 * 4, 1024, "x"), 512u);
  EXPECT_EQ(cuda::cudnn_workspace_offset(base + 16, 4096, 100 * 4, 1024, "x"), 496u);
  EXPECT_EQ(cuda::cudnn_workspace_offset(base, 512 + 3584, 400, 3584, "x"), 512u);  // exactly fits
  const std::string m = testing::error_message(
      [&] { cuda::cudnn_workspace_offset(base, 512 + 3583, 400, 3584, "cuDNN attention B=1 T=100"); });
  EXPECT_NE(m.find("cuDNN attention B=1 T=100: cuDNN's execution plan needs 3584 bytes"), std::string::npos)
      << m;
  EXPECT_NE(m.find("the attention scratch gives 3583 bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("attention_scratch_floats(cuda, shape, dtype)"), std::string::npos) << m;
}

// An fp32 call is the kernels' before anything is loaded (no GPU, no cuDNN needed to say so).
TEST(CudnnAttentionRules, AnFp32CallIsTheKernelsWithoutLoadingCudnn) {
  CudnnAttention att(cuda::CudnnFallback::refuse, "libcudnn_tierzero_absent.so.9");
  const AttentionShape a{1, 64, 2, 2, 64};
  EXPECT_FALSE(att.forward(cudaStream_t{}, View{nullptr, DType::f32}, nullptr, nullptr, 0,
                           CView{nullptr, DType::f32}, a));
  EXPECT_FALSE(att.backward(cudaStream_t{}, View{nullptr, DType::f32}, nullptr, 0, CView{nullptr, DType::f32},
                            CView{nullptr, DType::f32}, CView{nullptr, DType::f32}, nullptr, a));
  EXPECT_EQ(att.cudnn_version(), 0u);
}

// ---- on a GPU ----

// Inputs in [-2, 2] rounded to the activation dtype; the references compute in fp32 on the same values.
struct Inputs {
  std::vector<float> qkv, dout;
};

std::vector<std::uint16_t> encode(const std::vector<float>& v, DType t) {
  std::vector<std::uint16_t> b(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    b[i] = t == DType::bf16 ? float_to_bf16(v[i]).bits : float_to_fp16(v[i]).bits;
  return b;
}

std::vector<float> decode(const std::vector<std::uint16_t>& b, DType t) {
  std::vector<float> v(b.size());
  for (std::size_t i = 0; i < b.size(); ++i)
    v[i] = t == DType::bf16 ? bf16_to_float(bf16{b[i]}) : fp16_to_float(fp16{b[i]});
  return v;
}

Inputs random_inputs(const AttentionShape& a, DType t, std::uint64_t seed) {
  test::Rng rng(seed);
  Inputs in{rng.floats(std::size_t(a.B) * a.T * a.qkv_width(), -2, 2),
            rng.floats(std::size_t(a.B) * a.T * a.out_width(), -2, 2)};
  in.qkv = decode(encode(in.qkv, t), t);
  in.dout = decode(encode(in.dout, t), t);
  return in;
}

struct Result {
  std::vector<float> out, lse, dqkv;
};

// out and dqkv from the cpu backend (fp32, the probabilities kept).
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

// The log-sum-exp from the fp32 kernels (within 2e-5 of a double reference: attention_cuda_test.cc).
std::vector<float> fp32_kernel_lse(const Inputs& in, const AttentionShape& a, cudaStream_t s) {
  DeviceArray<float> qkv(in.qkv, s), out(in.dout.size()), lse(attention_row_floats(a));
  cuda::attention_forward(s, out.data(), lse.data(), qkv.data(), a);
  return lse.download(s);
}

// cuDNN on `t` activations; outputs and scratch start as NaN bytes, so anything left unwritten shows.
Result run_cudnn(CudnnAttention& att, const Inputs& in, const AttentionShape& a, DType t, cudaStream_t s,
                 std::size_t scratch_floats) {
  DeviceArray<std::uint16_t> qkv(encode(in.qkv, t), s), dout(encode(in.dout, t), s), out(in.dout.size()),
      dqkv(in.qkv.size());
  DeviceArray<float> lse(attention_row_floats(a)), scratch(scratch_floats);
  for (auto* x : {&out, &dqkv}) x->fill_bytes(0xff, s);
  lse.fill_bytes(0xff, s);
  scratch.fill_bytes(0xff, s);
  EXPECT_TRUE(att.forward(s, View{out.data(), t}, lse.data(), scratch.data(), scratch_floats,
                          CView{qkv.data(), t}, a));
  EXPECT_TRUE(att.backward(s, View{dqkv.data(), t}, scratch.data(), scratch_floats, CView{dout.data(), t},
                           CView{qkv.data(), t}, CView{out.data(), t}, lse.data(), a));
  return Result{decode(out.download(s), t), lse.download(s), decode(dqkv.download(s), t)};
}

// 16-bit tolerances, as the bf16 tensor-core kernels state theirs (attention_cuda_test.cc): cuDNN rounds P
// and dS to the io dtype before the products, with fp32 accumulation, and rounds what it stores once; inputs
// in [-2, 2] put the largest such error near 0.023: 0.03 + 5% of the value, times sqrt(G) on the k and v
// columns (sums over a group of G query heads). fp16's rounding is 8x finer; the same bound holds it.
constexpr double kAtol = 0.03, kRtol = 0.05;
// lse is fp32 throughout (exact 16-bit products summed in fp32, exp and log in fp32): within 2e-4 + 1e-4
// relative of the fp32 kernels' (a missing scale or mask moves it by > 0.1).
constexpr double kLseAtol = 2e-4, kLseRtol = 1e-4;

std::vector<double> tolerance(const AttentionShape& a, const std::vector<float>& want, std::size_t row) {
  std::vector<double> tol(want.size());
  const double kv_atol = kAtol * std::sqrt(double(a.group()));
  for (std::size_t i = 0; i < want.size(); ++i) {
    const bool kv = row == std::size_t(a.qkv_width()) && i % row >= std::size_t(a.out_width());
    tol[i] = (kv ? kv_atol : kAtol) + kRtol * std::fabs(want[i]);
  }
  return tol;
}

std::size_t count_nan(const std::vector<float>& v) {
  return std::size_t(std::count_if(v.begin(), v.end(), [](float x) { return std::isnan(x); }));
}

// Skips without a GPU (CudaKernelTest), without cuDNN 9, or off Hopper (where cuDNN is not asked to run).
class CudnnGpuTest : public test::CudaKernelTest {
 protected:
  void SetUp() override {
    test::CudaKernelTest::SetUp();
    if (IsSkipped()) return;
    try {
      version_ = cuda::cudnn().version();
    } catch (const Error& e) {
      GTEST_SKIP() << "no cuDNN 9 here: " << e.what();
    }
    int dev = 0, major = 0;
    TZ_CUDA_CHECK(cudaGetDevice(&dev));
    TZ_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    if (major != 9)
      GTEST_SKIP() << "cuDNN's attention runs on Hopper only; GPU " << dev << " is sm_" << major << "x";
  }
  // Why this cuDNN version must not run the shape ("" when it may; the kernels run it in training).
  std::string version_refuses(const AttentionShape& a) const {
    return CudnnAttention::version_refuses(version_, a);
  }
  std::size_t version_ = 0;
};

struct Case {
  AttentionShape a;
  DType t;
};

class CudnnAttentionShapes : public CudnnGpuTest, public ::testing::WithParamInterface<Case> {};

// Head sizes 64 and 128; multi-head, NH 8 over KVH 2, multi-query; B of 1 and 2; T of 128, 256, 1024 and
// 100 and 200 (not multiples of 64); gpt2's and Llama 3.2 1B's heads at T = 1024.
const AttentionShape kShapes[] = {{2, 128, 4, 4, 64},    {1, 256, 4, 4, 128}, {2, 256, 8, 2, 64},
                                  {1, 128, 8, 2, 128},   {2, 128, 8, 1, 64},  {1, 256, 8, 1, 128},
                                  {2, 200, 8, 2, 64},    {1, 100, 8, 1, 128}, {1, 100, 4, 4, 64},
                                  {1, 1024, 12, 12, 64}, {1, 1024, 32, 8, 64}};

// Every shape in bf16 (what training runs), two in fp16 too: each shape and dtype is a plan cuDNN compiles
// at run time (NVRTC), which costs time on the lent GPU.
std::vector<Case> cases() {
  std::vector<Case> c;
  for (const AttentionShape& a : kShapes) c.push_back({a, DType::bf16});
  c.push_back({kShapes[0], DType::f16});
  c.push_back({kShapes[3], DType::f16});
  return c;
}

// One CudnnAttention for the shape tests, so a shape's plans are built once for both (never destroyed: its
// handle would outlive the CUDA runtime at exit).
CudnnAttention& shared_attention() {
  static auto* att = new CudnnAttention(cuda::CudnnFallback::refuse, "");
  return *att;
}

TEST_P(CudnnAttentionShapes, OutLseAndDqkvMatchTheReferencesWithin16BitTolerances) {
  const auto [a, t] = GetParam();
  if (const std::string why = version_refuses(a); !why.empty()) GTEST_SKIP() << why;
  const Inputs in = random_inputs(a, t, 90);
  CudnnAttention& att = shared_attention();
  const Result got = run_cudnn(att, in, a, t, stream_, cuda_attention_scratch_floats(a, t));
  const Result want = run_cpu(in, a);
  EXPECT_TRUE(test::within("out", got.out, want.out, tolerance(a, want.out, a.out_width())));
  EXPECT_TRUE(test::within("dqkv", got.dqkv, want.dqkv, tolerance(a, want.dqkv, a.qkv_width())));
  EXPECT_TRUE(test::all_near("lse", got.lse, fp32_kernel_lse(in, a, stream_), kLseAtol, kLseRtol));
  EXPECT_EQ(count_nan(got.out) + count_nan(got.dqkv) + count_nan(got.lse), 0u) << "they start as NaN";
  // What the plans asked for, within what the memory plan reserves (the scratch refuses more anyway).
  const std::size_t ws = att.workspace_bytes(a, t);
  RecordProperty("workspace_bytes", std::to_string(ws));
  RecordProperty("workspace_bound", std::to_string(cudnn_attention_workspace_bound(a)));
  EXPECT_LE(ws, cudnn_attention_workspace_bound(a));
}

TEST_P(CudnnAttentionShapes, TwoRunsGiveTheSameBits) {
  const auto [a, t] = GetParam();
  if (const std::string why = version_refuses(a); !why.empty()) GTEST_SKIP() << why;
  const Inputs in = random_inputs(a, t, 91);
  CudnnAttention& att = shared_attention();
  const std::size_t floats = cuda_attention_scratch_floats(a, t);
  const Result x = run_cudnn(att, in, a, t, stream_, floats), y = run_cudnn(att, in, a, t, stream_, floats);
  EXPECT_TRUE(test::same_bits("out", x.out, y.out));
  EXPECT_TRUE(test::same_bits("lse", x.lse, y.lse));
  EXPECT_TRUE(test::same_bits("dqkv", x.dqkv, y.dqkv));  // the deterministic backward: no atomics in dQ
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudnnAttentionShapes, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return label(info.param.a) + "_" + std::string(dtype_name(info.param.t));
                         });

// A scratch with room for the row sums only: the backward's plan needs workspace (its dP), so it is refused
// (the forward's too, if it asks for any), naming what it needs and what the scratch gives.
TEST_F(CudnnGpuTest, TheWorkspaceCheckRefusesAnUndersizedScratchNamingBothSizes) {
  const AttentionShape a{2, 256, 8, 8, 64};
  CudnnAttention att(cuda::CudnnFallback::refuse, "");
  const Inputs in = random_inputs(a, DType::bf16, 92);
  const std::string m =
      testing::error_message([&] { run_cudnn(att, in, a, DType::bf16, stream_, attention_row_floats(a)); });
  EXPECT_NE(m.find("of workspace but the attention scratch gives 0 bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("cuDNN's execution plan needs "), std::string::npos) << m;
  EXPECT_NE(m.find(" B=2 T=256 NH=8 KVH=8 hd=64"), std::string::npos) << m;
}

// ---- through the cuda backend ----

// Forward then backward through a device's backend on `t` activations of shape a; out and dqkv back.
Result run_backend(Device& dev, const Inputs& in, const AttentionShape& a, DType t) {
  Backend& be = dev.backend();
  auto stream = dev.create_stream();
  const std::size_t es = dtype_size(t);
  Buffer<std::uint8_t> qkv(dev, in.qkv.size() * es, "qkv"), dout(dev, in.dout.size() * es, "dout"),
      out(dev, in.dout.size() * es, "out"), dqkv(dev, in.qkv.size() * es, "dqkv");
  Buffer<float> saved(dev, attention_saved_floats(dev.kind(), a, t), "saved"),
      scratch(dev, attention_scratch_floats(dev.kind(), a, t), "scratch");
  std::vector<std::uint16_t> h_qkv, h_dout;
  std::vector<float> f_qkv = in.qkv, f_dout = in.dout;
  const void* src_qkv = f_qkv.data();
  const void* src_dout = f_dout.data();
  if (t != DType::f32) {
    h_qkv = encode(in.qkv, t), h_dout = encode(in.dout, t);
    src_qkv = h_qkv.data(), src_dout = h_dout.data();
  }
  be.copy_async(*stream, qkv.data(), src_qkv, qkv.bytes());
  be.copy_async(*stream, dout.data(), src_dout, dout.bytes());
  be.attention_forward(*stream, View{out.data(), t}, saved.data(), scratch.data(), CView{qkv.data(), t}, a);
  be.attention_backward(*stream, View{dqkv.data(), t}, scratch.data(), CView{dout.data(), t},
                        CView{qkv.data(), t}, CView{out.data(), t}, saved.data(), a);
  std::vector<std::uint8_t> o(out.bytes()), d(dqkv.bytes());
  be.copy_async(*stream, o.data(), out.data(), o.size());
  be.copy_async(*stream, d.data(), dqkv.data(), d.size());
  stream->synchronize();
  auto values = [&](const std::vector<std::uint8_t>& b) {
    if (t == DType::f32) {
      std::vector<float> v(b.size() / 4);
      std::memcpy(v.data(), b.data(), b.size());
      return v;
    }
    std::vector<std::uint16_t> h(b.size() / 2);
    std::memcpy(h.data(), b.data(), b.size());
    return decode(h, t);
  };
  return Result{values(o), {}, values(d)};
}

cuda::CudaOptions options(cuda::Attention math, cuda::CudnnFallback fallback, std::string library = "") {
  cuda::CudaOptions o;
  o.attention = math;
  o.cudnn_fallback = fallback;
  o.cudnn_library = std::move(library);
  return o;
}

// Attention::cudnn runs cuDNN for a bf16 shape it takes (refuse: it would throw otherwise), and the bf16
// kernels, bit for bit, for what it does not take: fp32 activations and a single position.
TEST_F(CudnnGpuTest, TheBackendRunsCudnnWhereItCanAndTheBf16KernelsElsewhere) {
  auto dnn = cuda::make_cuda_device({}, options(cuda::Attention::cudnn, cuda::CudnnFallback::refuse));
  auto kernels = cuda::make_cuda_device({}, options(cuda::Attention::bf16, cuda::CudnnFallback::refuse));
  const AttentionShape a{2, 128, 8, 2, 64};
  const Inputs in = random_inputs(a, DType::bf16, 93);
  const Result got = run_backend(*dnn, in, a, DType::bf16), want = run_cpu(in, a);
  EXPECT_TRUE(test::within("out", got.out, want.out, tolerance(a, want.out, a.out_width())));
  EXPECT_TRUE(test::within("dqkv", got.dqkv, want.dqkv, tolerance(a, want.dqkv, a.qkv_width())));
  for (auto [shape, t] : {Case{a, DType::f32}, Case{AttentionShape{2, 1, 4, 4, 64}, DType::bf16}}) {
    SCOPED_TRACE(label(shape) + " " + std::string(dtype_name(t)));
    const Inputs x = random_inputs(shape, DType::bf16, 94);
    const Result d = run_backend(*dnn, x, shape, t), k = run_backend(*kernels, x, shape, t);
    EXPECT_TRUE(test::same_bits("out", d.out, k.out));
    EXPECT_TRUE(test::same_bits("dqkv", d.dqkv, k.dqkv));
  }
}

// Without the library (a name that does not exist), Attention::cudnn is the bf16 kernels bit for bit, and
// says so in one line however many shapes and calls follow.
TEST_F(CudnnGpuTest, WithoutTheLibraryTheBackendRunsTheBf16KernelsAndSaysSoInOneLine) {
  auto dnn = cuda::make_cuda_device({}, options(cuda::Attention::cudnn, cuda::CudnnFallback::bf16_kernels,
                                                "libcudnn_tierzero_absent.so.9"));
  auto kernels = cuda::make_cuda_device({}, options(cuda::Attention::bf16, cuda::CudnnFallback::refuse));
  ::testing::internal::CaptureStderr();
  for (const AttentionShape& a : {AttentionShape{2, 128, 4, 4, 64}, AttentionShape{1, 256, 8, 2, 128}})
    for (int run = 0; run < 2; ++run) {
      SCOPED_TRACE(label(a) + " run " + std::to_string(run));
      const Inputs in = random_inputs(a, DType::bf16, 95);
      const Result d = run_backend(*dnn, in, a, DType::bf16), k = run_backend(*kernels, in, a, DType::bf16);
      EXPECT_TRUE(test::same_bits("out", d.out, k.out));
      EXPECT_TRUE(test::same_bits("dqkv", d.dqkv, k.dqkv));
    }
  const std::string err = ::testing::internal::GetCapturedStderr();
  std::size_t lines = 0;
  for (std::size_t at = err.find("cuDNN attention is off"); at != std::string::npos;
       at = err.find("cuDNN attention is off", at + 1))
    ++lines;
  EXPECT_EQ(lines, 1u) << err;
  EXPECT_NE(err.find("cannot load cuDNN (libcudnn_tierzero_absent.so.9)"), std::string::npos) << err;
  EXPECT_NE(err.find("the bf16 tensor-core kernels run every attention"), std::string::npos) << err;
}

}  // namespace
}  // namespace tz
