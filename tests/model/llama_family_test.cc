// The Llama family's record: presets with their published shapes count their parameters as Hugging
// Face does, the layout has Hugging Face's names and [out, in] matrices and agrees with the count, FLOPs
// per token as PaLM's appendix counts them, seeded initialisation as LlamaPreTrainedModel's, the shape
// rules' refusals, and a plan of each preset; training it is refused until its forward and backward exist.
#include "model/llama_family.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "model/llama_layout.h"
#include "tests/common/error_message.h"
#include "zero/memory_plan.h"

namespace tz {
namespace {

using testing::error_message;

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// transformers' model.num_parameters() for each model's published config.json.
TEST(LlamaFamily, PresetsCountTheirParametersAsHuggingFaceDoes) {
  const std::map<std::string, std::size_t> hf = {
      {"llama3.2-1b", 1235814400},  {"llama3.2-3b", 3212749824}, {"llama3.1-8b", 8030261248},
      {"llama3.1-70b", 70553706496}, {"qwen2.5-0.5b", 494032768}, {"qwen2.5-7b", 7615616512},
      {"mistral-7b", 7248023552}};
  for (const auto& [name, count] : hf) {
    const ModelConfig c = model_preset(name);
    EXPECT_EQ(c.family, "llama") << name;
    EXPECT_EQ(c.num_parameters_unpadded(), count) << name;
  }
}

TEST(LlamaFamily, TheLayoutHasHuggingFacesNamesAndShapesAndAgreesWithTheCounts) {
  for (const std::string& name : model_family("llama").preset_names()) {
    const ModelConfig c = model_preset(name);
    const ParamLayout l = ParamLayout::build(c);
    ASSERT_EQ(l.groups.size(), std::size_t(c.n_layer) + 2) << name;
    std::size_t stored = 0, hf = 0;
    for (const GroupSpec& g : l.groups)
      for (const TensorSpec& t : g.tensors) {
        EXPECT_EQ(t.hf_name, t.name);
        EXPECT_EQ(t.decay, t.shape.size() == 2) << t.name;
        std::size_t n = 1;
        for (auto d : t.hf_shape) n *= std::size_t(d);
        stored += t.count, hf += n;
      }
    EXPECT_EQ(stored, c.num_parameters()) << name;
    EXPECT_EQ(hf, c.num_parameters_unpadded()) << name;
  }
  const ParamLayout big = ParamLayout::build(model_preset("llama3.1-8b"));
  EXPECT_EQ(big.find("lm_head.weight")->shape, (std::vector<std::int64_t>{128256, 4096}));  // untied, held
  EXPECT_NE(big.groups[0].tensors.size(), 1u);
  EXPECT_EQ(big.find("model.layers.31.self_attn.k_proj.weight")->shape, (std::vector<std::int64_t>{1024, 4096}));
  EXPECT_EQ(big.find("model.layers.0.mlp.down_proj.weight")->shape, (std::vector<std::int64_t>{4096, 14336}));
  EXPECT_EQ(big.find("model.layers.0.self_attn.q_proj.bias"), nullptr);
  const ParamLayout tied = ParamLayout::build(model_preset("llama3.2-1b"));
  EXPECT_EQ(tied.find("lm_head.weight"), nullptr);
  const ParamLayout qwen = ParamLayout::build(model_preset("qwen2.5-0.5b"));
  EXPECT_EQ(qwen.find("model.layers.3.self_attn.k_proj.bias")->shape, (std::vector<std::int64_t>{128}));
  EXPECT_EQ(qwen.find("model.layers.3.self_attn.o_proj.bias"), nullptr);  // Qwen2: q, k, v biases only
  EXPECT_EQ(qwen.backward_order().front(), qwen.final_norm_group());
  EXPECT_EQ(qwen.backward_order().back(), qwen.embedding_group());
}

TEST(LlamaFamily, FlopsPerTokenAreSixPerParameterTheProductsReadAndAttentions) {
  const ModelConfig c = model_preset("llama3.1-8b");
  // The untied embedding is a lookup, not a product; lm_head is one.
  const double N = 8030261248.0 - 128256.0 * 4096;
  EXPECT_EQ(model_family(c).flops_per_token(c, 8192), 6 * N + 12.0 * 32 * 32 * 128 * 8192);
  const ModelConfig t = model_preset("llama3.2-1b");  // tied: the embedding is the head, a product
  EXPECT_EQ(model_family(t).flops_per_token(t, 1024), 6 * 1235814400.0 + 12.0 * 16 * 32 * 64 * 1024);
}

TEST(LlamaFamily, InitialisationIsLlamasSeededAndLeavesPaddedRowsZero) {
  ModelConfig c = model_preset("llama-tiny");
  c.vocab_size = 200;  // padded to 256
  c.padded_vocab_size = ModelConfig::pad_vocab(200);
  const ParamLayout l = ParamLayout::build(c);
  const ModelFamily& f = model_family(c);
  std::vector<float> emb, block, again, other;
  f.init_group(c, l, 7, 0, emb);
  f.init_group(c, l, 7, 1, block);
  f.init_group(c, l, 7, 1, again);
  f.init_group(c, l, 8, 1, other);
  EXPECT_EQ(block, again);
  EXPECT_NE(block, other);
  const TensorSpec* e = l.find("model.embed_tokens.weight");
  for (std::size_t i = 200 * 64; i < 256 * 64; ++i) ASSERT_EQ(emb[e->offset + i], 0.0f) << i;
  for (const TensorSpec& t : l.groups[1].tensors) {
    const float* p = block.data() + t.offset;
    if (t.shape.size() == 1) {
      for (std::size_t i = 0; i < t.count; ++i) ASSERT_EQ(p[i], 1.0f) << t.name;  // the RMSNorm weights
      continue;
    }
    double sum = 0, sq = 0;
    for (std::size_t i = 0; i < t.count; ++i) sum += p[i], sq += double(p[i]) * p[i];
    const double mean = sum / t.count, sd = std::sqrt(sq / t.count - mean * mean);
    EXPECT_NEAR(sd, 0.02, 0.02 * 5 / std::sqrt(double(t.count))) << t.name;  // 5 standard errors of the sd
    EXPECT_NEAR(mean, 0.0, 0.02 * 5 / std::sqrt(double(t.count))) << t.name;
  }
}

TEST(LlamaFamily, ShapesItCannotHaveAreRefusedNamingTheField) {
  ModelConfig c = model_preset("llama3.1-8b");
  c.n_kv_head = 3;
  EXPECT_TRUE(has(error_message([&] { c.validate(); }), "num_key_value_heads (3) must divide num_attention_heads (32)"));
  c = model_preset("llama-tiny");
  c.head_dim = 15;
  EXPECT_TRUE(has(error_message([&] { c.validate(); }), "head_dim (15) must be even"));
  c = model_preset("llama-tiny");
  c.rope_theta = std::nan("");
  EXPECT_TRUE(has(error_message([&] { c.validate(); }), "rope_theta must be a positive number"));
  c = model_preset("llama3.1-8b");
  c.rope_high_freq_factor = 0.5;
  EXPECT_TRUE(has(error_message([&] { c.validate(); }), "rope_scaling (llama3)"));
}

TEST(LlamaFamily, EveryPresetIsPlanned) {
  for (const std::string& name : model_family("llama").preset_names()) {
    PlanInputs in;
    in.model = model_preset(name);
    in.shape = ModelShape{1, 1024};
    in.dtype = DType::bf16;
    in.zero.stage = 3;
    in.world = 8;
    const MemoryPlan p = plan_memory(in);
    // Only the padding that starts a large tensor on a block (model/param_layout.h): under 0.01%.
    EXPECT_GE(p.layout.total, in.model.num_parameters()) << name;
    EXPECT_LE(p.layout.total - in.model.num_parameters(),
              std::max<std::size_t>(4096, in.model.num_parameters() / 10000))
        << name;
    EXPECT_GT(p.total(Tier::device), 2 * in.model.num_parameters() / 8) << name;       // its bf16 shard at least
  }
}

}  // namespace
}  // namespace tz
