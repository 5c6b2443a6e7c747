// Tests core/cpu_adam.h: every CPU Adam path this machine can run, with every working dtype, bit for
// bit against the scalar reference (math::adamw_update, then from_float for the working copy).
#include "core/cpu_adam.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "core/dtype.h"
#include "core/elementwise.h"
#include "core/error.h"
#include "tests/common/random.h"

namespace tz {
namespace {

enum class Out { none, f32, bf16, f16 };

std::string out_name(Out o) {
  switch (o) {
    case Out::none:
      return "none";
    case Out::f32:
      return "fp32";
    case Out::bf16:
      return "bf16";
    case Out::f16:
      return "fp16";
  }
  return "?";
}

DType out_dtype(Out o) { return o == Out::f32 ? DType::f32 : o == Out::f16 ? DType::f16 : DType::bf16; }
std::size_t out_bytes(Out o) { return o == Out::none ? 0 : dtype_size(out_dtype(o)); }

float from_bits(std::uint32_t u) { return bits_float(u); }

// Where the working copy lies: the vector paths stream their stores to an aligned copy and store
// through the cache otherwise, so both placements are tested.
enum class Placement { aligned, unaligned };

// The optimizer state one test steps twice: once through the path under test, once through the reference.
struct State {
  std::vector<float> p, m, v;
  std::vector<std::uint8_t> storage;  // holds the working copy at w
  std::uint8_t* w;
  State(std::vector<float> p0, Out o, Placement at = Placement::aligned)
      : p(std::move(p0)), m(p.size()), v(p.size()), storage(p.size() * out_bytes(o) + 128) {
    const auto base = (reinterpret_cast<std::uintptr_t>(storage.data()) + 63) / 64 * 64;
    w = reinterpret_cast<std::uint8_t*>(base) + (at == Placement::aligned ? 0 : 4);
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;
};

// The scalar reference: math::adamw_update element by element with the coefficients cpu_adamw
// derives (the adam_coeffs test checks those separately), then from_float for the working copy.
// This file is built with -ffp-contract=off (tests/CMakeLists.txt), like core/cpu_adam*.cc.
void reference_step(State& s, const std::vector<float>& g, const AdamStep& st, Out o) {
  const math::AdamCoeffs c = adam_coeffs(st);
  for (std::size_t i = 0; i < s.p.size(); ++i) {
    math::adamw_update(s.p[i], s.m[i], s.v[i], g[i], c);
    std::uint8_t* w = s.w + i * out_bytes(o);
    if (o == Out::f32) std::memcpy(w, &s.p[i], 4);
    if (o == Out::bf16) {
      const bf16 h = from_float<bf16>(s.p[i]);
      std::memcpy(w, &h, 2);
    }
    if (o == Out::f16) {
      const fp16 h = from_float<fp16>(s.p[i]);
      std::memcpy(w, &h, 2);
    }
  }
}

void path_step(CpuAdamIsa isa, State& s, const std::vector<float>& g, const AdamStep& st, Out o) {
  cpu_adamw_with(isa, s.p.data(), s.m.data(), s.v.data(), g.data(), s.p.size(), st,
                 o == Out::none ? nullptr : s.w, out_dtype(o));
}

// How NaNs compare. IEEE 754 leaves open which payload an operation returns when both operands are
// NaN, x86 returns the first operand's, and the compiler may swap the operands of a commutative add
// or multiply (it does, differently in different loops), so where two NaNs can meet only NaN-ness is
// compared. A NaN from a single NaN source keeps its payload deterministically and compares exactly.
enum class Nans { exact, any_payload };

// The element formats compared: their width and which bit patterns are NaN.
enum class Bits { f32, bf16, f16 };

std::size_t width(Bits b) { return b == Bits::f32 ? 4 : 2; }

bool is_nan(Bits b, std::uint32_t u) {
  switch (b) {
    case Bits::f32:
      return (u & 0x7fffffffu) > 0x7f800000u;
    case Bits::bf16:
      return (u & 0x7fffu) > 0x7f80u;
    case Bits::f16:
      return (u & 0x7fffu) > 0x7c00u;
  }
  return false;
}

Bits out_bits(Out o) { return o == Out::bf16 ? Bits::bf16 : o == Out::f16 ? Bits::f16 : Bits::f32; }

// Element-by-element bit equality of two arrays, naming the first difference.
::testing::AssertionResult same_bits(const std::string& what, const void* got, const void* want,
                                     std::size_t n, Bits bits, Nans nans = Nans::exact) {
  const std::size_t size = width(bits);
  auto at = [size](const void* base, std::size_t i) {
    std::uint32_t u = 0;
    std::memcpy(&u, static_cast<const char*>(base) + i * size, size);
    return u;
  };
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t a = at(got, i), b = at(want, i);
    if (a == b || (nans == Nans::any_payload && is_nan(bits, a) && is_nan(bits, b))) continue;
    if (bad++ == 0) first = i;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  char msg[160];
  std::snprintf(msg, sizeof msg, "%zu of %zu elements differ; first at [%zu]: got 0x%0*x, want 0x%0*x", bad,
                n, first, int(2 * size), at(got, first), int(2 * size), at(want, first));
  return ::testing::AssertionFailure() << what << ": " << msg;
}

void expect_same_state(const State& got, const State& want, Out o, Nans nans = Nans::exact) {
  const std::size_t n = want.p.size();
  EXPECT_TRUE(same_bits("p", got.p.data(), want.p.data(), n, Bits::f32, nans));
  EXPECT_TRUE(same_bits("m", got.m.data(), want.m.data(), n, Bits::f32, nans));
  EXPECT_TRUE(same_bits("v", got.v.data(), want.v.data(), n, Bits::f32, nans));
  if (o != Out::none) {
    EXPECT_TRUE(same_bits("working " + out_name(o), got.w, want.w, n, out_bits(o), nans));
  }
}

// Gradients over many magnitudes (1e-7 to 1e2), so v's square and the bias corrections see small
// and large values alike.
std::vector<float> gradients(test::Rng& rng, std::size_t n) {
  std::vector<float> g = rng.floats(n, -1, 1);
  for (auto& x : g) x = std::ldexp(x, rng.below(32) - 24);
  return g;
}

using PathParam = std::tuple<CpuAdamIsa, Out>;

class CpuAdamPath : public ::testing::TestWithParam<PathParam> {
 protected:
  void SetUp() override {
    if (!cpu_adam_isa_supported(isa())) {
      GTEST_SKIP() << "this CPU cannot run the " << cpu_adam_isa_name(isa()) << " path";
    }
  }
  CpuAdamIsa isa() const { return std::get<0>(GetParam()); }
  Out out() const { return std::get<1>(GetParam()); }
};

TEST_P(CpuAdamPath, MatchesTheScalarReferenceBitForBitOverSteps) {
  test::Rng rng(2024);
  // Sizes around the vector widths (8, 16) and the 32-element iteration, and past several 64 Ki-element
  // chunks with a ragged end.
  for (std::size_t n :
       {std::size_t(1), std::size_t(15), std::size_t(17), std::size_t(47), std::size_t(1000003)}) {
    for (float wd : {0.0f, 0.1f}) {
      // The working copy's placement only matters where there is one; alternate it with weight decay.
      const Placement at = wd == 0.0f ? Placement::aligned : Placement::unaligned;
      SCOPED_TRACE("n " + std::to_string(n) + ", weight decay " + std::to_string(wd) +
                   (at == Placement::aligned ? ", aligned" : ", unaligned") + " working copy");
      std::vector<float> p0 = rng.floats(n, -2, 2);
      for (std::size_t i = 0; i < n; i += 5) p0[i] *= 1e-4f;
      State got(p0, out(), at), want(p0, out(), at);
      AdamStep st;
      st.lr = 1e-3f;
      st.weight_decay = wd;
      for (int step = 1; step <= 4; ++step) {
        SCOPED_TRACE("step " + std::to_string(step));
        st.step = step;
        st.grad_scale = step % 2 ? 0.37f : 1.0f;  // != 1 (clipping) and exactly 1
        const std::vector<float> g = gradients(rng, n);
        path_step(isa(), got, g, st, out());
        reference_step(want, g, st, out());
        expect_same_state(got, want, out());
        if (HasFailure()) return;
      }
    }
  }
}

// Zeros of both signs, denormals, values whose square overflows, Inf, and NaNs of several payloads
// and signs in g (a signalling one too), in every combination with p, m, v values of those kinds
// (NaN aside). In step 1 each NaN has one source, so outputs must match bit for bit, payloads
// included. Steps 2 and 3 rotate the gradients so that NaNs already in m, v, p meet new ones: there
// any NaN matches a NaN (see Nans).
TEST_P(CpuAdamPath, SpecialValuesPropagateLikeTheReference) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> ps = {
      0.0f,     -0.0f,    1.0f, -3.5f, from_bits(0x00000001u), from_bits(0x80345678u), 1e30f,
      65504.0f, 65520.0f, inf,  -inf};
  const std::vector<float> gs = {0.0f,
                                 -0.0f,
                                 from_bits(0x00000003u),
                                 from_bits(0x807fffffu),
                                 1e-30f,
                                 -1e20f,
                                 3e38f,
                                 inf,
                                 -inf,
                                 from_bits(0x7fc12345u),
                                 from_bits(0xffc00007u),
                                 from_bits(0x7f800001u) /* signalling */,
                                 0.5f};
  const std::vector<float> ms = {0.0f, from_bits(0x00400000u), -1.0f, inf, -inf};
  const std::vector<float> vs = {0.0f, from_bits(0x00000010u), 1e-3f, inf};
  std::vector<float> p0, g1, m0, v0;
  for (float p : ps)
    for (float g : gs)
      for (float m : ms)
        for (float v : vs) {
          p0.push_back(p);
          g1.push_back(g);
          m0.push_back(m);
          v0.push_back(v);
        }
  const std::size_t n = p0.size();
  State got(p0, out()), want(p0, out());
  got.m = want.m = m0;
  got.v = want.v = v0;
  AdamStep st;
  st.lr = 1e-2f;
  st.weight_decay = 0.01f;
  for (int step = 1; step <= 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    st.step = step;
    st.grad_scale = step == 1 ? 2.0f : step == 2 ? 0.5f : 1.0f;  // 3e38 * 2 overflows to Inf
    std::vector<float> g(n);
    for (std::size_t i = 0; i < n; ++i) g[i] = g1[(i + (step - 1) * 7) % n];
    path_step(isa(), got, g, st, out());
    reference_step(want, g, st, out());
    expect_same_state(got, want, out(), step == 1 ? Nans::exact : Nans::any_payload);
    // The inputs do produce NaNs, so the comparison above checked where they land.
    std::size_t nans = 0;
    for (std::size_t i = 0; i < n; ++i) nans += std::isnan(want.p[i]);
    EXPECT_GT(nans, 0u);
  }
}

// With lr = 0 and g = m = v = 0 the step leaves p as it is (a signalling NaN comes out quiet), so
// the working copy is exactly from_float(p): this sweeps the rounding over every bf16 rounding
// boundary, every fp16 mantissa in and around fp16's exponent range (subnormal outputs, ties,
// overflow to Inf), NaN payloads and random bit patterns.
class CpuAdamWorkingCopy : public CpuAdamPath {};

TEST_P(CpuAdamWorkingCopy, RoundsLikeFromFloatAtEveryBoundary) {
  std::vector<float> p0;
  for (std::uint32_t hi = 0; hi < 0x10000u; ++hi)
    for (std::uint32_t lo : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
      p0.push_back(from_bits(hi << 16 | lo));
  for (std::uint32_t sign : {0u, 0x80000000u})
    for (std::uint32_t e = 98; e <= 145; ++e)  // 2^-29 .. 2^18: fp16 underflow to overflow
      for (std::uint32_t man = 0; man < 1024; ++man)
        for (std::uint32_t low : {0x0000u, 0x0001u, 0x07ffu, 0x0fffu, 0x1000u, 0x1001u, 0x1fffu})
          p0.push_back(from_bits(sign | e << 23 | man << 13 | low));
  test::Rng rng(7);
  for (int i = 0; i < (1 << 16); ++i) p0.push_back(from_bits(rng.bits32()));
  const std::size_t n = p0.size();
  State got(p0, out()), want(p0, out());
  const std::vector<float> g(n, 0.0f);
  AdamStep st;  // lr 0: step_size 0, decay 1
  path_step(isa(), got, g, st, out());
  reference_step(want, g, st, out());
  expect_same_state(got, want, out());
}

std::string path_name(const ::testing::TestParamInfo<PathParam>& info) {
  return std::string(cpu_adam_isa_name(std::get<0>(info.param))) + "_" + out_name(std::get<1>(info.param));
}

const auto kIsas = ::testing::Values(CpuAdamIsa::avx512, CpuAdamIsa::avx2, CpuAdamIsa::scalar);

INSTANTIATE_TEST_SUITE_P(AllPaths, CpuAdamPath,
                         ::testing::Combine(kIsas,
                                            ::testing::Values(Out::none, Out::f32, Out::bf16, Out::f16)),
                         path_name);
INSTANTIATE_TEST_SUITE_P(AllPaths, CpuAdamWorkingCopy,
                         ::testing::Combine(kIsas, ::testing::Values(Out::f32, Out::bf16, Out::f16)),
                         path_name);

class CpuAdamMemoryPass : public ::testing::TestWithParam<CpuAdamIsa> {};

// The benchmark's limit pass must move the bytes and change nothing.
TEST_P(CpuAdamMemoryPass, LeavesEveryValueAsItWas) {
  const CpuAdamIsa isa = GetParam();
  if (!cpu_adam_isa_supported(isa)) {
    GTEST_SKIP() << "this CPU cannot run the " << cpu_adam_isa_name(isa) << " path";
  }
  test::Rng rng(11);
  const std::size_t n = 200003;
  std::vector<float> p = rng.floats(n), m = rng.floats(n), v = rng.floats(n), g = rng.floats(n);
  const std::vector<float> p0 = p, m0 = m, v0 = v, g0 = g;
  cpu_adam_memory_pass(isa, p.data(), m.data(), v.data(), g.data(), n);
  EXPECT_TRUE(same_bits("p", p.data(), p0.data(), n, Bits::f32));
  EXPECT_TRUE(same_bits("m", m.data(), m0.data(), n, Bits::f32));
  EXPECT_TRUE(same_bits("v", v.data(), v0.data(), n, Bits::f32));
  EXPECT_TRUE(same_bits("g", g.data(), g0.data(), n, Bits::f32));
  // With a working copy it writes the copy's bytes too (p's bits, or their top half), as the step's
  // working write would, aligned (streaming stores) or not.
  for (std::size_t shift : {std::size_t(0), std::size_t(1)}) {
    std::vector<float> w32(n + 1, -1.0f);
    std::vector<std::uint16_t> w16(n + 1, 0xffff);
    cpu_adam_memory_pass(isa, p.data(), m.data(), v.data(), g.data(), n, w32.data() + shift, DType::f32);
    cpu_adam_memory_pass(isa, p.data(), m.data(), v.data(), g.data(), n, w16.data() + shift, DType::bf16);
    std::vector<std::uint16_t> top(n);
    for (std::size_t i = 0; i < n; ++i) top[i] = std::uint16_t(float_bits(p0[i]) >> 16);
    EXPECT_TRUE(same_bits("fp32 working copy", w32.data() + shift, p0.data(), n, Bits::f32)) << "shift " << shift;
    EXPECT_TRUE(same_bits("16-bit working copy", w16.data() + shift, top.data(), n, Bits::bf16)) << "shift " << shift;
  }
  EXPECT_TRUE(same_bits("p", p.data(), p0.data(), n, Bits::f32));
}

INSTANTIATE_TEST_SUITE_P(AllPaths, CpuAdamMemoryPass, kIsas,
                         [](const ::testing::TestParamInfo<CpuAdamIsa>& info) {
                           return std::string(cpu_adam_isa_name(info.param));
                         });

// ctest runs one OpenMP thread per test; the chunks must also come out right split over a team.
TEST(CpuAdam, ATeamOfThreadsGivesTheSameBitsAsOne) {
  test::Rng rng(5);
  const std::size_t n = 3 * 65536 + 12345;
  const std::vector<float> p0 = rng.floats(n, -1, 1), g = gradients(rng, n);
  State got(p0, Out::bf16), want(p0, Out::bf16);
  AdamStep st;
  st.lr = 1e-3f;
  st.weight_decay = 0.01f;
  const int threads = omp_get_max_threads();
  omp_set_num_threads(2);
  cpu_adamw(got.p.data(), got.m.data(), got.v.data(), g.data(), n, st, got.w, DType::bf16);
  omp_set_num_threads(threads);
  reference_step(want, g, st, Out::bf16);
  expect_same_state(got, want, Out::bf16);
}

TEST(CpuAdam, DefaultPathIsTheWidestTheCpuSupportsUnlessOverridden) {
  const CpuAdamIsa widest = cpu_adam_isa_supported(CpuAdamIsa::avx512) ? CpuAdamIsa::avx512
                            : cpu_adam_isa_supported(CpuAdamIsa::avx2) ? CpuAdamIsa::avx2
                                                                       : CpuAdamIsa::scalar;
  EXPECT_EQ(select_cpu_adam_isa(nullptr), widest);
  EXPECT_EQ(select_cpu_adam_isa(""), widest);
  EXPECT_EQ(select_cpu_adam_isa("scalar"), CpuAdamIsa::scalar);
  EXPECT_TRUE(cpu_adam_isa_supported(CpuAdamIsa::scalar));
  for (CpuAdamIsa isa : {CpuAdamIsa::avx512, CpuAdamIsa::avx2}) {
    const std::string name(cpu_adam_isa_name(isa));
    if (cpu_adam_isa_supported(isa))
      EXPECT_EQ(select_cpu_adam_isa(name.c_str()), isa);
    else
      EXPECT_THROW(select_cpu_adam_isa(name.c_str()), Error) << name;
  }
  // cpu_adam_isa() reports what the environment (if anything) chose, read once.
  EXPECT_EQ(cpu_adam_isa(), cpu_adam_isa_name(select_cpu_adam_isa(std::getenv("TZ_CPU_ADAM_ISA"))));
}

TEST(CpuAdam, UnknownPathNamesAreRejectedWithTheValidOnesAndWhereTheNameCameFrom) {
  try {
    select_cpu_adam_isa("sse4", "--isa");
    FAIL() << "no error for an unknown path";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--isa 'sse4' is not a CPU Adam path: use avx512, avx2 or scalar"), std::string::npos)
        << what;
  }
  EXPECT_THROW(select_cpu_adam_isa("AVX512"), Error);  // names are lower case, as printed
}

TEST(CpuAdam, RejectsAWorkingTypeItCannotWriteAndStepZero) {
  std::vector<float> p(4), m(4), v(4), g(4);
  std::vector<std::int32_t> w(4);
  AdamStep st;
  EXPECT_THROW(cpu_adamw(p.data(), m.data(), v.data(), g.data(), 4, st, w.data(), DType::i32), Error);
  st.step = 0;
  EXPECT_THROW(cpu_adamw(p.data(), m.data(), v.data(), g.data(), 4, st, nullptr, DType::bf16), Error);
}

// The coefficients are core/cpu_backend.cc's: torch's bias corrections in double, rounded once.
TEST(CpuAdam, CoefficientsApplyTorchBiasCorrections) {
  AdamStep st;
  st.lr = 3e-4f;
  st.beta1 = 0.9f;
  st.beta2 = 0.95f;
  st.step = 7;
  const math::AdamCoeffs c = adam_coeffs(st);
  EXPECT_EQ(c.step_size, float(double(st.lr) / (1.0 - std::pow(double(st.beta1), 7))));
  EXPECT_EQ(c.inv_bias2_sqrt, float(1.0 / std::sqrt(1.0 - std::pow(double(st.beta2), 7))));
  EXPECT_EQ(c.lr, st.lr);
  EXPECT_EQ(c.grad_scale, st.grad_scale);
}

}  // namespace
}  // namespace tz
