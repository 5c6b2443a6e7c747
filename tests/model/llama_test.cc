// The Llama family's forward/backward (model/llama.cc) against an independent double-precision reference
// (tests/model/llama_reference.h): the loss directly, every tensor's gradient through central finite
// differences of the reference, for grouped-query (2 and 3 query heads per key-value head), multi-query
// and multi-head attention, tied and untied heads, Qwen2's q/k/v biases, Llama's attention and MLP
// biases, a head_dim that is not n_embd / n_head, and Llama 3.1's rope scaling. Plus checkpointing,
// the head in chunks, bf16, the acquisition order and the planned buffers.
#include "model/llama.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "core/backend.h"
#include "core/error.h"
#include "model/model_family.h"
#include "tests/model/grads_near.h"
#include "tests/model/host_provider.h"
#include "tests/model/llama_reference.h"

namespace tz {
namespace {

struct Case {
  const char* name;
  int heads, kv_heads, width, head_dim, ffn;
  bool tied, qkv_bias, o_bias, mlp_bias;
  double rope_factor;  // > 0: Llama 3.1's scaling with original length 64, low 1, high 4
};

// head_dim 6 with 4 heads of a 16-wide model: q is 24 wide, not n_embd.
constexpr Case kCases[] = {
    {"GroupedQuery2Untied", 4, 2, 16, 4, 24, false, false, false, false, 0},
    {"MultiQueryTiedQkvBiasWideHeads", 4, 1, 16, 6, 20, true, true, false, false, 0},
    {"GroupedQuery3Llama3RopeAllBiases", 6, 2, 12, 8, 16, false, false, true, true, 8},
    {"MultiHeadTied", 2, 2, 16, 8, 24, true, false, false, false, 0},
};

ModelConfig config_of(const Case& k) {
  ModelConfig c = model_family("llama").preset("llama-tiny");
  c.n_layer = 2, c.n_head = k.heads, c.n_kv_head = k.kv_heads, c.n_embd = k.width, c.head_dim = k.head_dim;
  c.ffn_dim = k.ffn, c.vocab_size = 20, c.padded_vocab_size = ModelConfig::pad_vocab(20), c.max_seq_len = 8;
  c.tied_head = k.tied, c.qkv_bias = k.qkv_bias, c.o_bias = k.o_bias, c.mlp_bias = k.mlp_bias;
  c.norm_eps = 1e-5, c.rope_theta = 10000;
  if (k.rope_factor > 0)
    c.rope_factor = k.rope_factor, c.rope_low_freq_factor = 1, c.rope_high_freq_factor = 4,
    c.rope_original_max_seq_len = 64;
  return c;
}

class LlamaTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    cfg = config_of(GetParam());
    layout = ParamLayout::build(cfg);
    const ModelFamily& fam = model_family(cfg);
    prov.p.resize(layout.groups.size());
    for (std::size_t g = 0; g < layout.groups.size(); ++g) fam.init_group(cfg, layout, 42, int(g), prov.p[g]);
    // Perturb everything but padded vocabulary rows, so norms' weights, biases and attention all matter.
    std::mt19937 rng(5);
    std::normal_distribution<float> noise(0.0f, 0.3f);
    for (std::size_t g = 0; g < layout.groups.size(); ++g)
      for (const TensorSpec& t : layout.groups[g].tensors)
        for (std::size_t i = 0; i < real_count(t); ++i) prov.p[g][t.offset + i] += noise(rng);
    prov.zero_grads();
    std::mt19937 trng(9);
    for (int i = 0; i < B * T; ++i) {
      in.push_back(int(trng() % cfg.vocab_size));
      tgt.push_back(int(trng() % cfg.vocab_size));
    }
  }

  static std::size_t real_count(const TensorSpec& t) {
    std::size_t n = 1;
    for (auto dim : t.hf_shape) n *= std::size_t(dim);
    return n;
  }

  std::vector<std::vector<double>> as_double() const {
    std::vector<std::vector<double>> d;
    for (auto& g : prov.p) d.emplace_back(g.begin(), g.end());
    return d;
  }

  float run(Llama& model) {
    prov.zero_grads();
    prov.order.clear();
    Buffer<double> sum(*dev, 1, "loss sum");
    double host = 0;
    dev->backend().copy_async(*stream, sum.data(), &host, sizeof host);
    model.forward(prov, in.data(), tgt.data(), 1.0f, sum.data(), *stream);
    model.backward(prov, *stream);
    dev->backend().copy_async(*stream, &host, sum.data(), sizeof host);
    stream->synchronize();
    return float(host / (B * T));
  }

  static constexpr int B = 2, T = 5;
  ModelConfig cfg;
  ParamLayout layout;
  test::HostProvider prov;
  std::vector<std::int32_t> in, tgt;
  std::unique_ptr<Device> dev = make_cpu_device();
  std::unique_ptr<Stream> stream = dev->create_stream();
};

TEST_P(LlamaTest, LossMatchesTheDoublePrecisionReference) {
  Llama model(*dev, cfg, {B, T}, DType::f32, ActivationCheckpointing::off);
  const float loss = run(model);
  const double ref = testing::RefLlama{cfg, layout}.loss(as_double(), in, tgt, B, T);
  // fp32 accumulation over at most 24 terms per product: relative error well below 1e-5.
  EXPECT_NEAR(loss, ref, 1e-5 * std::abs(ref));
}

TEST_P(LlamaTest, EveryTensorsGradientMatchesFiniteDifferencesOfTheReference) {
  Llama model(*dev, cfg, {B, T}, DType::f32, ActivationCheckpointing::off);
  run(model);
  testing::RefLlama ref{cfg, layout};
  auto params = as_double();
  std::mt19937 rng(3);
  int checked = 0;
  for (std::size_t g = 0; g < layout.groups.size(); ++g)
    for (const TensorSpec& t : layout.groups[g].tensors) {
      const std::size_t n = real_count(t);
      for (int k = 0; k < 6; ++k) {
        const std::size_t idx = t.offset + rng() % n;
        const double keep = params[g][idx], h = 1e-5;
        params[g][idx] = keep + h;
        const double lp = ref.loss(params, in, tgt, B, T);
        params[g][idx] = keep - h;
        const double lm = ref.loss(params, in, tgt, B, T);
        params[g][idx] = keep;
        const double fd = (lp - lm) / (2 * h);  // truncation O(h^2) ~ 1e-10, rounding ~1e-11
        // fp32 arithmetic through 2 blocks: 2e-5 absolute plus 1e-3 relative, as GPT-2's check.
        EXPECT_NEAR(prov.g[g][idx], fd, 2e-5 + 1e-3 * std::abs(fd)) << t.name << " element " << idx - t.offset;
        ++checked;
      }
    }
  EXPECT_GT(checked, 6 * 10);
  // Padded vocabulary rows get no probability mass and no lookups: their gradients are exactly zero.
  for (const TensorSpec& t : layout.groups[0].tensors)
    for (std::size_t i = real_count(t); i < t.count; ++i)
      ASSERT_EQ(prov.g[0][t.offset + i], 0.0f) << t.name << " padded element " << i;
}

TEST_P(LlamaTest, ActivationCheckpointingGivesBitwiseIdenticalLossAndGradients) {
  Llama plain(*dev, cfg, {B, T}, DType::f32, ActivationCheckpointing::off);
  const float l1 = run(plain);
  const auto g1 = prov.g;
  Llama ckpt(*dev, cfg, {B, T}, DType::f32, ActivationCheckpointing::per_block);
  const float l2 = run(ckpt);
  EXPECT_EQ(l1, l2);
  for (std::size_t g = 0; g < g1.size(); ++g)
    for (std::size_t i = 0; i < g1[g].size(); ++i) ASSERT_EQ(g1[g][i], prov.g[g][i]) << "group " << g << " elem " << i;
  EXPECT_LT(ckpt.activation_bytes(), plain.activation_bytes());
}

// The head in chunks of 3 rows (3 + 3 + 3 + 1 of B*T = 10): the same loss and gradients up to the
// splitting of the head's gradient sum over rows.
TEST_P(LlamaTest, TheHeadInChunksOfRowsGivesTheSameLossAndGradients) {
  Llama whole(*dev, cfg, {B, T}, DType::f32, ActivationCheckpointing::off);
  const float l1 = run(whole);
  const auto g1 = prov.g;
  Llama chunked(*dev, cfg, {B, T, 3}, DType::f32, ActivationCheckpointing::off);
  EXPECT_EQ(Llama::logits_rows(cfg, {B, T, 3}), 3);
  const float l2 = run(chunked);
  EXPECT_NEAR(l2, l1, 1e-6 * std::abs(l1));
  for (std::size_t g = 0; g < g1.size(); ++g)
    for (std::size_t i = 0; i < g1[g].size(); ++i)
      ASSERT_NEAR(prov.g[g][i], g1[g][i], 1e-6 + 1e-5 * std::abs(g1[g][i])) << "group " << g << " elem " << i;
}

// bf16 parameters, with activations stored in bf16 (the default) or in fp32, against fp32 throughout.
TEST_P(LlamaTest, Bf16RunsStayCloseToFp32WithActivationsInEitherDtype) {
  Llama f32(*dev, cfg, {B, T}, DType::f32, ActivationCheckpointing::off);
  const float l32 = run(f32);
  const auto g32 = prov.g;
  prov.set_dtype(DType::bf16);
  for (const Precision pr : {Precision{DType::bf16}, Precision{DType::bf16, DType::f32}}) {
    SCOPED_TRACE(std::string("activations ") + std::string(dtype_name(pr.act)));
    Llama b16(*dev, cfg, {B, T}, pr, ActivationCheckpointing::off);
    const float l16 = run(b16);
    // bf16 keeps 8 significant bits on every product's inputs (2^-9 relative), and with bf16 activations
    // on every stored activation and gradient: 1% of the loss, and each gradient within 10% of its
    // tensor's largest (GPT-2's bound is 8%; RMSNorm's weights and the rotation add a product or two).
    EXPECT_NEAR(l16, l32, 0.01 * std::abs(l32));
    // Per element, within 10% of the tensor's largest gradient (above).
    const double worst = testing::expect_grads_near(prov.g, g32, layout, 0.10f);
    std::printf("llama bf16, %s activations: loss %.6g vs %.6g, worst gradient %.4f of its tensor's largest\n",
                std::string(dtype_name(pr.act)).c_str(), l16, l32, worst);
  }
}

TEST_P(LlamaTest, EachGroupIsAcquiredOncePerPassAndReportedReadyInTheFamilysOrder) {
  Llama model(*dev, cfg, {B, T}, DType::f32, ActivationCheckpointing::off);
  run(model);
  const int groups = int(layout.groups.size());
  EXPECT_EQ(prov.acquired, 2 * groups);
  EXPECT_EQ(prov.released, 2 * groups);
  EXPECT_EQ(prov.order, model_family(cfg).gradient_order(layout));
}

// The model takes exactly the buffers the family plans, and the device budget sees exactly their bytes.
TEST_P(LlamaTest, TheModelAllocatesExactlyThePlannedBuffers) {
  for (auto ck : {ActivationCheckpointing::off, ActivationCheckpointing::per_block})
    for (auto dt : {DType::f32, DType::bf16, DType::f16})
      for (auto kind : {MemoryKind::device, MemoryKind::pinned_host}) {
        const auto specs = model_family(cfg).buffers(cfg, {B, T}, dt, ck, kind, DeviceKind::cpu);
        const std::size_t before = dev->budget(MemoryKind::device).used();
        const std::size_t host = dev->budget(MemoryKind::pinned_host).used();
        Llama model(*dev, cfg, {B, T}, dt, ck, kind);
        EXPECT_EQ(dev->budget(MemoryKind::device).used() - before, total_bytes(specs, MemoryKind::device));
        EXPECT_EQ(dev->budget(MemoryKind::pinned_host).used() - host, total_bytes(specs, MemoryKind::pinned_host));
        EXPECT_EQ(model.activation_bytes(), total_bytes(specs, MemoryKind::device));
      }
}

INSTANTIATE_TEST_SUITE_P(Shapes, LlamaTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

TEST(LlamaModel, RefusesATokenOutsideTheVocabulary) {
  const ModelConfig cfg = model_family("llama").preset("llama-tiny");
  auto dev = make_cpu_device();
  auto stream = dev->create_stream();
  Llama model(*dev, cfg, {1, 4}, DType::f32, ActivationCheckpointing::off);
  test::HostProvider prov;
  std::vector<std::int32_t> in{1, 2, cfg.vocab_size, 3}, tgt{1, 2, 3, 4};
  try {
    Buffer<double> sum(*dev, 1, "loss sum");
    model.forward(prov, in.data(), tgt.data(), 1.0f, sum.data(), *stream);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input token 256 at position 2 is outside the vocabulary [0, 256)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tz
