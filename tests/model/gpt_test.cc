// GPT forward/backward against an independent double-precision reference: the loss directly, the
// gradients through central finite differences of that reference; plus checkpointing, bf16 and budgets.
#include "model/gpt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "core/error.h"
#include "core/backend.h"
#include "model/gpt_init.h"
#include "tests/model/gpt_reference.h"
#include "tests/model/grads_near.h"
#include "tests/model/host_provider.h"

namespace tz {
namespace {

class GptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cfg.n_layer = 2;
    cfg.n_head = 2;
    cfg.n_embd = 8;
    cfg.vocab_size = 20;
    cfg.padded_vocab_size = ModelConfig::pad_vocab(cfg.vocab_size);
    cfg.max_seq_len = 8;
    layout = ParamLayout::build(cfg);
    init_gpt_params(cfg, layout, 42, prov.p);
    // Perturb everything (except padded vocabulary rows) so biases, LayerNorm and attention all matter.
    std::mt19937 rng(5);
    std::normal_distribution<float> noise(0.0f, 0.3f);
    for (std::size_t g = 0; g < layout.groups.size(); ++g)
      for (const TensorSpec& t : layout.groups[g].tensors) {
        std::size_t n = t.name == "wte.weight" ? std::size_t(cfg.vocab_size) * cfg.n_embd : t.count;
        for (std::size_t i = 0; i < n; ++i) prov.p[g][t.offset + i] += noise(rng);
      }
    prov.zero_grads();
    std::mt19937 trng(9);
    for (int i = 0; i < B * T; ++i) {
      in.push_back(int(trng() % cfg.vocab_size));
      tgt.push_back(int(trng() % cfg.vocab_size));
    }
  }

  std::vector<std::vector<double>> as_double() const {
    std::vector<std::vector<double>> d;
    for (auto& g : prov.p) d.emplace_back(g.begin(), g.end());
    return d;
  }

  // Forward and backward; the loss is the mean of the per-position losses, read back from the device
  // scalar the model adds their sum to.
  float run(Gpt& model) {
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

TEST_F(GptTest, LossMatchesTheDoublePrecisionReference) {
  Gpt model(*dev, cfg, {B, T}, DType::f32, ActivationCheckpointing::off);
  float loss = run(model);
  double ref = testing::RefGpt{cfg, layout}.loss(as_double(), in, tgt, B, T);
  // fp32 accumulation over at most 4C = 32 terms per product: relative error well below 1e-5.
  EXPECT_NEAR(loss, ref, 1e-5 * std::abs(ref));
}

TEST_F(GptTest, EveryTensorsGradientMatchesFiniteDifferencesOfTheReference) {
  Gpt model(*dev, cfg, {B, T}, DType::f32, ActivationCheckpointing::off);
  run(model);
  testing::RefGpt ref{cfg, layout};
  auto params = as_double();
  std::mt19937 rng(3);
  int checked = 0;
  for (std::size_t g = 0; g < layout.groups.size(); ++g)
    for (const TensorSpec& t : layout.groups[g].tensors) {
      std::size_t n = t.name == "wte.weight" ? std::size_t(cfg.vocab_size) * cfg.n_embd : t.count;
      for (int k = 0; k < 6; ++k) {
        std::size_t idx = t.offset + rng() % n;
        double keep = params[g][idx], h = 1e-5;
        params[g][idx] = keep + h;
        double lp = ref.loss(params, in, tgt, B, T);
        params[g][idx] = keep - h;
        double lm = ref.loss(params, in, tgt, B, T);
        params[g][idx] = keep;
        double fd = (lp - lm) / (2 * h);  // truncation error O(h^2) ~ 1e-10, rounding ~1e-11
        // The model's gradient is fp32 arithmetic through 2 blocks: allow 2e-5 absolute plus 1e-3 relative.
        EXPECT_NEAR(prov.g[g][idx], fd, 2e-5 + 1e-3 * std::abs(fd))
            << t.name << " element " << idx - t.offset;
        ++checked;
      }
    }
  EXPECT_GT(checked, 100);
  // Padded vocabulary rows never receive probability mass, so their gradient is exactly zero.
  for (std::size_t i = std::size_t(cfg.vocab_size) * cfg.n_embd;
       i < std::size_t(cfg.padded_vocab_size) * cfg.n_embd; ++i)
    ASSERT_EQ(prov.g[0][gpt_offsets(cfg).wte + i], 0.0f) << "padded wte element " << i;
}

TEST_F(GptTest, ActivationCheckpointingGivesBitwiseIdenticalLossAndGradients) {
  Gpt plain(*dev, cfg, {B, T}, DType::f32, ActivationCheckpointing::off);
  float l1 = run(plain);
  auto g1 = prov.g;
  Gpt ckpt(*dev, cfg, {B, T}, DType::f32, ActivationCheckpointing::per_block);
  float l2 = run(ckpt);
  EXPECT_EQ(l1, l2);
  for (std::size_t g = 0; g < g1.size(); ++g)
    for (std::size_t i = 0; i < g1[g].size(); ++i)
      ASSERT_EQ(g1[g][i], prov.g[g][i]) << "group " << g << " elem " << i;
  EXPECT_LT(ckpt.activation_bytes(), plain.activation_bytes());
}

// The LM head in chunks of 3 rows (3 + 3 + 3 + 1 of B*T = 10): forward keeps only each chunk's losses,
// backward recomputes all chunks but the last. The same loss (to the reference) and gradients (to the
// unchunked model's: only the splitting of wte's gradient sum over rows differs, so 1e-6 absolute).
TEST_F(GptTest, TheLmHeadInChunksOfRowsGivesTheSameLossAndGradients) {
  Gpt whole(*dev, cfg, {B, T}, DType::f32, ActivationCheckpointing::off);
  const float l1 = run(whole);
  const auto g1 = prov.g;
  Gpt chunked(*dev, cfg, {B, T, 3}, DType::f32, ActivationCheckpointing::off);
  EXPECT_EQ(Gpt::logits_rows(cfg, {B, T, 3}), 3);
  const float l2 = run(chunked);
  const double ref = testing::RefGpt{cfg, layout}.loss(as_double(), in, tgt, B, T);
  EXPECT_NEAR(l2, ref, 1e-5 * std::abs(ref));
  EXPECT_NEAR(l2, l1, 1e-6 * std::abs(l1));
  for (std::size_t g = 0; g < g1.size(); ++g)
    for (std::size_t i = 0; i < g1[g].size(); ++i)
      ASSERT_NEAR(prov.g[g][i], g1[g][i], 1e-6 + 1e-5 * std::abs(g1[g][i])) << "group " << g << " elem " << i;
  // The logits buffer holds 3 rows instead of 10.
  EXPECT_EQ(whole.activation_bytes() - chunked.activation_bytes(),
            std::size_t(B * T - 3) * cfg.padded_vocab_size * sizeof(float));
}

// bf16 parameters, with activations stored in bf16 (the default) or in fp32, against fp32 throughout.
TEST_F(GptTest, Bf16RunsStayCloseToFp32WithActivationsInEitherDtype) {
  Gpt f32(*dev, cfg, {B, T}, DType::f32, ActivationCheckpointing::off);
  const float l32 = run(f32);
  const auto g32 = prov.g;
  prov.set_dtype(DType::bf16);
  for (const Precision pr : {Precision{DType::bf16}, Precision{DType::bf16, DType::f32}}) {
    SCOPED_TRACE(std::string("activations ") + std::string(dtype_name(pr.act)));
    Gpt b16(*dev, cfg, {B, T}, pr, ActivationCheckpointing::off);
    const float l16 = run(b16);
    // bf16 keeps 8 significant bits (relative rounding 2^-9 ~ 0.2%) on every matmul input, and, with
    // bf16 activations, on every stored activation and activation gradient too: 1% of the loss.
    EXPECT_NEAR(l16, l32, 0.01 * std::abs(l32));
    // Per element, within 8% of the tensor's largest gradient: bf16 rounds params, activations and
    // output gradients (2^-9 relative each) through every block back to the embedding.
    const double worst = testing::expect_grads_near(prov.g, g32, layout, 0.08f);
    std::printf("gpt bf16, %s activations: loss %.6g vs %.6g, worst gradient %.4f of its tensor's largest\n",
                std::string(dtype_name(pr.act)).c_str(), l16, l32, worst);
  }
}

TEST_F(GptTest, EachGroupIsAcquiredOncePerPassAndReportedReady) {
  Gpt model(*dev, cfg, {B, T}, DType::f32, ActivationCheckpointing::off);
  run(model);
  int groups = int(layout.groups.size());
  EXPECT_EQ(prov.acquired, 2 * groups);
  EXPECT_EQ(prov.released, 2 * groups);
  EXPECT_EQ(prov.ready, groups);
  EXPECT_EQ(prov.order, Gpt::gradient_order(layout));  // the order the reducer plans its buckets by
}

TEST_F(GptTest, RefusesATokenOutsideTheVocabulary) {
  Gpt model(*dev, cfg, {B, T}, DType::f32, ActivationCheckpointing::off);
  in[3] = cfg.vocab_size;
  try {
    Buffer<double> sum(*dev, 1, "loss sum");
    model.forward(prov, in.data(), tgt.data(), 1.0f, sum.data(), *stream);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("outside the vocabulary"), std::string::npos) << e.what();
  }
}

TEST_F(GptTest, ActivationsThatDoNotFitTheDeviceBudgetFailWithTheBudgetError) {
  auto small = make_cpu_device(16 * 1024);
  try {
    Gpt model(*small, cfg, {B, T}, DType::f32, ActivationCheckpointing::off);
    FAIL() << "expected the budget error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("device memory budget"), std::string::npos) << m;
    EXPECT_NE(m.find("16.00 KiB"), std::string::npos) << m;
  }
  EXPECT_EQ(small->budget(MemoryKind::device).used(), 0u);  // everything allocated before the failure was released
}

// The model takes exactly the buffers it plans (PlannedBuffers refuses any other and the constructor
// checks none is left), and the device budget sees exactly their bytes.
TEST_F(GptTest, TheModelAllocatesExactlyThePlannedBuffers) {
  const Precision precisions[] = {DType::f32, DType::bf16, DType::f16, Precision{DType::bf16, DType::f32},
                                  Precision{DType::f16, DType::f32}};
  for (auto ck : {ActivationCheckpointing::off, ActivationCheckpointing::per_block})
    for (const Precision pr : precisions)
      for (auto kind : {MemoryKind::device, MemoryKind::pinned_host}) {
        const auto specs = Gpt::buffers(cfg, {B, T}, pr, ck, kind);
        const std::size_t before = dev->budget(MemoryKind::device).used(), host = dev->budget(MemoryKind::pinned_host).used();
        Gpt model(*dev, cfg, {B, T}, pr, ck, kind);
        EXPECT_EQ(dev->budget(MemoryKind::device).used() - before, total_bytes(specs, MemoryKind::device));
        EXPECT_EQ(dev->budget(MemoryKind::pinned_host).used() - host, total_bytes(specs, MemoryKind::pinned_host));
        EXPECT_EQ(model.activation_bytes(), total_bytes(specs, MemoryKind::device));
        // Checkpoints on the host tier: L + 1 residual streams of B x T x C activations.
        EXPECT_EQ(model.offloaded_checkpoint_bytes(),
                  kind == MemoryKind::pinned_host
                      ? std::size_t(cfg.n_layer + 1) * B * T * cfg.n_embd * dtype_size(pr.act)
                      : 0u);
      }
}

}  // namespace
}  // namespace tz
