// The compressed-state AdamW (core/adam_compressed.h): every vector path this CPU has against the scalar
// definition (core/adam_int8.h) bit for bit, for int8 and bf16 moments under fp32 and bf16-sr masters, on
// shards of several lengths; the 4096-element rule; shards that split a tensor.
#include "core/adam_compressed.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/blockwise_quant.h"
#include "core/error.h"
#include "core/quant_map.h"

namespace tz {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// One shard's states in the given formats, all bytes owned; moments start at 0.
struct Shard {
  MomentFormat moments;
  MasterFormat master;
  std::size_t n;
  std::vector<float> p32, m32, v32, m_abs, v_abs;
  std::vector<bf16> p16, m16, v16;
  std::vector<std::uint8_t> m8, v8;

  Shard(MomentFormat mf, MasterFormat pf, const std::vector<float>& p0) : moments(mf), master(pf), n(p0.size()) {
    for (float x : p0) (master == MasterFormat::fp32 ? p32.push_back(x) : p16.push_back(float_to_bf16(x)));
    m32.assign(n, 0.0f), v32.assign(n, 0.0f), m16.assign(n, bf16{0}), v16.assign(n, bf16{0});
    m8.assign(n, nearest_code(dynamic_map(true), 0.0f)), v8.assign(n, nearest_code(dynamic_map(false), 0.0f));
    m_abs.assign(quant_blocks(n), 0.0f), v_abs.assign(quant_blocks(n), 0.0f);
  }

  // The states of elements [at, at + len) (at on a block boundary for int8).
  CompressedStates view(std::size_t at) {
    CompressedStates s;
    s.moments = moments, s.master = master;
    s.p = master == MasterFormat::fp32 ? static_cast<void*>(p32.data() + at) : static_cast<void*>(p16.data() + at);
    switch (moments) {
      case MomentFormat::fp32:
        s.m = m32.data() + at, s.v = v32.data() + at;
        break;
      case MomentFormat::bf16:
        s.m = m16.data() + at, s.v = v16.data() + at;
        break;
      case MomentFormat::int8:
        s.m = m8.data() + at, s.v = v8.data() + at;
        s.m_absmax = m_abs.data() + at / kQuantBlock, s.v_absmax = v_abs.data() + at / kQuantBlock;
        break;
    }
    return s;
  }
};

// Elements whose bits differ between two shards (parameter, either moment), plus blocks whose absmax does.
long long differences(const Shard& a, const Shard& b, std::string* first) {
  long long bad = 0;
  auto note = [&](const char* what, std::size_t i) {
    if (bad++ == 0) *first = std::string(what) + " " + std::to_string(i);
  };
  for (std::size_t i = 0; i < a.n; ++i) {
    if (a.master == MasterFormat::fp32 ? float_bits(a.p32[i]) != float_bits(b.p32[i]) : a.p16[i].bits != b.p16[i].bits)
      note("parameter", i);
    else if (a.moments == MomentFormat::int8 && (a.m8[i] != b.m8[i] || a.v8[i] != b.v8[i]))
      note("int8 moment", i);
    else if (a.moments == MomentFormat::bf16 && (a.m16[i].bits != b.m16[i].bits || a.v16[i].bits != b.v16[i].bits))
      note("bf16 moment", i);
  }
  for (std::size_t k = 0; k < a.m_abs.size(); ++k)
    if (float_bits(a.m_abs[k]) != float_bits(b.m_abs[k]) || float_bits(a.v_abs[k]) != float_bits(b.v_abs[k]))
      note("absmax of block", k);
  return bad;
}

// Gradients for step t: normal, a stretch of zeros (a whole block where n allows), NaN/inf elements on even
// steps, a block whose sizes span six decades, and all zero from step `zero_from` on.
std::vector<float> gradient(std::mt19937& rng, std::size_t n, int t, int zero_from) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> g(n, 0.0f);
  if (t >= zero_from) return g;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t b = i / kQuantBlock;
    g[i] = b % 4 == 1 ? 0.0f : nd(rng) * (b % 4 == 3 ? std::pow(10.0f, -float(i % 6)) : 0.01f);
  }
  if (t % 2 == 0)
    for (std::size_t i = 5; i < n; i += 97) g[i] = i % 3 == 0 ? kNaN : (i % 3 == 1 ? kInf : -kInf);
  return g;
}

AdamStep adam(int t) {
  AdamStep s;
  s.lr = 1e-3f, s.weight_decay = 0.01f, s.step = t;
  return s;
}

using Case = std::tuple<CpuAdamIsa, MomentFormat, MasterFormat>;
class CompressedAdamIsa : public ::testing::TestWithParam<Case> {};

// Shards of 4096 + 77 (a short last block), exactly 4096, 1000 (one call below the rule's size, as the
// kernels allow), 3 blocks, 2 chunks and some (several OpenMP chunks): 6 steps of varied gradients, then
// 40 of zero gradient, each compared after every step with the scalar definition.
TEST_P(CompressedAdamIsa, EveryStepGivesTheScalarDefinitionsBits) {
  const auto [isa, moments, master] = GetParam();
  if (!cpu_adam_isa_supported(isa))
    GTEST_SKIP() << "this CPU cannot run the " << cpu_adam_isa_name(isa) << " path, so it is not checked here";
  for (std::size_t n : {std::size_t(4096 + 77), std::size_t(4096), std::size_t(1000), std::size_t(768),
                        std::size_t(2 * 65536 + 300)}) {
    std::mt19937 rng{unsigned(n)};
    std::normal_distribution<float> nd(0.0f, 0.02f);
    std::vector<float> p0(n);
    for (float& x : p0) x = nd(rng);
    Shard vec(moments, master, p0), ref(moments, master, p0);
    const ShardPosition at{512, 99};  // the shard starts two blocks into its tensor
    for (int t = 1; t <= 46; ++t) {
      const std::vector<float> g = gradient(rng, n, t, 7);
      adamw_compressed(isa, adam(t), vec.view(0), g.data(), n, at);
      adamw_compressed(CpuAdamIsa::scalar, adam(t), ref.view(0), g.data(), n, at);
      std::string first;
      const long long bad = differences(vec, ref, &first);
      ASSERT_EQ(bad, 0) << n << " elements, step " << t << ": first difference at " << first;
    }
    // The moments are not trivially zero, nor the parameters unchanged.
    if (moments == MomentFormat::int8) EXPECT_GT(ref.m_abs[0], 0.0f);
    if (master == MasterFormat::fp32) EXPECT_NE(ref.p32[0], p0[0]);
  }
}

INSTANTIATE_TEST_SUITE_P(
    PathsAndFormats, CompressedAdamIsa,
    ::testing::Combine(::testing::Values(CpuAdamIsa::avx512, CpuAdamIsa::avx2),
                       ::testing::Values(MomentFormat::int8, MomentFormat::bf16),
                       ::testing::Values(MasterFormat::fp32, MasterFormat::bf16_sr)),
    [](const auto& info) {
      std::string name = std::string(cpu_adam_isa_name(std::get<0>(info.param))) + "_" +
                         std::string(moment_format_name(std::get<1>(info.param))) + "Moments_" +
                         (std::get<2>(info.param) == MasterFormat::fp32 ? "Fp32Master" : "Bf16SrMaster");
      return name;
    });

// A tensor updated as two shards (split on a block boundary, each with its first element) is the tensor
// updated whole: blocks and random bits depend on the element, never on the sharding.
TEST(CompressedAdam, TwoShardsOfATensorGiveTheWholeTensorsBits) {
  for (MomentFormat moments : {MomentFormat::int8, MomentFormat::bf16}) {
    const std::size_t n = 5000, cut = 2048;
    std::mt19937 rng(3);
    std::normal_distribution<float> nd(0.0f, 0.02f);
    std::vector<float> p0(n);
    for (float& x : p0) x = nd(rng);
    Shard whole(moments, MasterFormat::bf16_sr, p0), split(moments, MasterFormat::bf16_sr, p0);
    for (int t = 1; t <= 3; ++t) {
      const std::vector<float> g = gradient(rng, n, t, 100);
      adamw_compressed(CpuAdamIsa::scalar, adam(t), whole.view(0), g.data(), n, ShardPosition{0, 5});
      adamw_compressed(CpuAdamIsa::scalar, adam(t), split.view(0), g.data(), cut, ShardPosition{0, 5});
      adamw_compressed(CpuAdamIsa::scalar, adam(t), split.view(cut), g.data() + cut, n - cut, ShardPosition{cut, 5});
    }
    std::string first;
    EXPECT_EQ(differences(whole, split, &first), 0) << moment_format_name(moments) << ": " << first;
  }
}

TEST(CompressedAdam, AnInt8ShardMustStartOnABlock) {
  std::vector<float> p0(1024, 0.1f), g(1024, 0.01f);
  Shard s(MomentFormat::int8, MasterFormat::fp32, p0);
  EXPECT_THROW(adamw_compressed(CpuAdamIsa::scalar, adam(1), s.view(0), g.data(), 512, ShardPosition{100, 0}),
               Error);
}

TEST(CompressedAdam, TensorsUnder4096ElementsKeepFp32Moments) {
  EXPECT_EQ(moment_format_for(4095, MomentFormat::int8), MomentFormat::fp32);
  EXPECT_EQ(moment_format_for(1, MomentFormat::bf16), MomentFormat::fp32);
  EXPECT_EQ(moment_format_for(4096, MomentFormat::int8), MomentFormat::int8);
  EXPECT_EQ(moment_format_for(4096, MomentFormat::bf16), MomentFormat::bf16);
  EXPECT_EQ(moment_format_for(1 << 20, MomentFormat::fp32), MomentFormat::fp32);
}

// fp32 moments with an fp32 master are the CPU Adam itself, bit for bit.
TEST(CompressedAdam, Fp32MomentsAndMasterAreTheCpuAdam) {
  const std::size_t n = 3000;
  std::mt19937 rng(8);
  std::normal_distribution<float> nd(0.0f, 0.02f);
  std::vector<float> p0(n);
  for (float& x : p0) x = nd(rng);
  Shard s(MomentFormat::fp32, MasterFormat::fp32, p0);
  std::vector<float> p = p0, m(n, 0.0f), v(n, 0.0f);
  for (int t = 1; t <= 3; ++t) {
    const std::vector<float> g = gradient(rng, n, t, 100);
    adamw_compressed(CpuAdamIsa::scalar, adam(t), s.view(0), g.data(), n, ShardPosition{});
    cpu_adamw_with(CpuAdamIsa::scalar, p.data(), m.data(), v.data(), g.data(), n, adam(t), nullptr, DType::f32);
  }
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(float_bits(s.p32[i]), float_bits(p[i])) << i;
}

TEST(CompressedAdam, FormatNamesRoundTripAndOthersAreRefused) {
  for (MomentFormat f : {MomentFormat::fp32, MomentFormat::bf16, MomentFormat::int8})
    EXPECT_EQ(parse_moment_format(moment_format_name(f), "--optimizer-states"), f);
  for (MasterFormat f : {MasterFormat::fp32, MasterFormat::bf16_sr})
    EXPECT_EQ(parse_master_format(master_format_name(f), "--master-weights"), f);
  EXPECT_THROW(parse_moment_format("int4", "--optimizer-states"), Error);
  EXPECT_THROW(parse_master_format("bf16", "--master-weights"), Error);
}

}  // namespace
}  // namespace tz
