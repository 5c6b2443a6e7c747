// Hugging Face model folders (model/hf_folder.h): config.json read as each family's config class reads it,
// weights from one file or from shards an index names, in F32, F16 or BF16, loaded bit for bit; and the
// hostile folders: no config, an unknown architecture or unbuilt math, an index naming a missing shard or
// a file outside the folder, a tensor in two shards or missing or extra or misshapen, NaN, a FIFO or
// /dev/zero as a shard, a tied head that is not the embedding.
#include "model/hf_folder.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "core/error.h"
#include "model/model_family.h"
#include "model/safetensors_writer.h"
#include "tests/common/error_message.h"
#include "tests/common/hf_test_folder.h"
#include "tests/common/random.h"
#include "tests/common/test_dir.h"

namespace tz {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::llama_tiny_config;
using test::weights_of;
using test::write_json;
using test::write_weights;
using test::Weights;

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

float rounded(float x, SafetensorsDType d) {
  if (d == SafetensorsDType::BF16) return bf16_to_float(float_to_bf16(x));
  if (d == SafetensorsDType::F16) return fp16_to_float(float_to_fp16(x));
  return x;
}

std::string shard_by_layer(const std::string& name) {
  if (has(name, "layers.0.")) return "model-00001-of-00003.safetensors";
  if (has(name, "layers.1.")) return "model-00002-of-00003.safetensors";
  return "model-00003-of-00003.safetensors";
}

TEST(HfFolder, ReadsLlamasConfigAsTransformersDoes) {
  testing::TestDir d;
  write_json(d.file("config.json"), llama_tiny_config());
  const ModelConfig c = read_hf_config(d.path());
  EXPECT_EQ(c, model_family("llama").preset("llama-tiny"));
}

TEST(HfFolder, ReadsQwen2MistralAndLlama31Configs) {
  testing::TestDir d;
  json q = llama_tiny_config();
  q["architectures"] = {"Qwen2ForCausalLM"};
  q["tie_word_embeddings"] = true;
  q["use_sliding_window"] = false;
  q["sliding_window"] = 32;
  write_json(d.file("config.json"), q);
  ModelConfig c = read_hf_config(d.path());
  EXPECT_TRUE(c.qkv_bias);   // Qwen2's q/k/v always have biases
  EXPECT_FALSE(c.o_bias);
  EXPECT_TRUE(c.tied_head);
  EXPECT_EQ(c.sliding_window, 0);  // not used
  json m = llama_tiny_config();
  m["architectures"] = {"MistralForCausalLM"};
  m["sliding_window"] = 48;
  m.erase("head_dim");  // MistralConfig: hidden_size / num_attention_heads
  write_json(d.file("config.json"), m);
  c = read_hf_config(d.path());
  EXPECT_EQ(c.sliding_window, 48);
  EXPECT_EQ(c.head_dim, 16);
  json l = llama_tiny_config();
  l["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  l["attention_bias"] = true;
  write_json(d.file("config.json"), l);
  c = read_hf_config(d.path());
  EXPECT_EQ(c.rope_factor, 32.0);
  EXPECT_EQ(c.rope_original_max_seq_len, 8192);
  EXPECT_TRUE(c.qkv_bias && c.o_bias);
  // transformers 5: theta and the scaling together in rope_parameters.
  json t5 = llama_tiny_config();
  t5.erase("rope_theta");
  t5.erase("rope_scaling");
  t5["rope_parameters"] = {{"rope_type", "llama3"}, {"rope_theta", 500000.0}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                           {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  write_json(d.file("config.json"), t5);
  c = read_hf_config(d.path());
  EXPECT_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rope_factor, 8.0);
}

TEST(HfFolder, RefusesConfigsItCannotTrainNamingTheField) {
  testing::TestDir d;
  auto refusal = [&](json j) {
    write_json(d.file("config.json"), j);
    return testing::error_message([&] { read_hf_config(d.path()); });
  };
  EXPECT_TRUE(has(testing::error_message([&] { read_hf_config(d.path()); }), "has no config.json"));
  json j = llama_tiny_config();
  j["architectures"] = {"FalconForCausalLM"};
  EXPECT_TRUE(has(refusal(j), "architecture 'FalconForCausalLM' is not one tierzero trains (GPT2LMHeadModel, LlamaForCausalLM"));
  j = llama_tiny_config();
  j["hidden_act"] = "gelu";
  EXPECT_TRUE(has(refusal(j), "\"hidden_act\" is 'gelu'; only silu"));
  j = llama_tiny_config();
  j["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}};
  EXPECT_TRUE(has(refusal(j), "rope scaling of type 'yarn' is not built"));
  j = llama_tiny_config();
  j["quantization_config"] = {{"quant_method", "bitsandbytes"}};
  EXPECT_TRUE(has(refusal(j), "quantized weights are not read"));
  j = llama_tiny_config();
  j["num_key_value_heads"] = 3;
  EXPECT_TRUE(has(refusal(j), "num_key_value_heads (3) must divide num_attention_heads (4)"));
  j = llama_tiny_config();
  j["hidden_size"] = "64";
  EXPECT_TRUE(has(refusal(j), "\"hidden_size\" must be a whole number"));
  j = llama_tiny_config();
  j["vocab_size"] = 1e12;
  EXPECT_TRUE(has(refusal(j), "\"vocab_size\" must be a whole number"));
  EXPECT_TRUE(has(refusal(json::array()), "is not a JSON object"));
  std::ofstream(d.file("config.json")) << "{\"architectures\": [\"LlamaForCausalLM\"";
  EXPECT_TRUE(has(testing::error_message([&] { read_hf_config(d.path()); }), "config.json"));
}

class HfWeights : public ::testing::TestWithParam<SafetensorsDType> {};

// One file and three shards, each dtype: every parameter is the file's value (rounded to the file's dtype
// when written), bit for bit; padded vocabulary rows zero.
TEST_P(HfWeights, SingleFileAndShardedFoldersLoadBitForBit) {
  const SafetensorsDType dt = GetParam();
  const ModelConfig cfg = model_family("llama").preset("llama-tiny");
  const ParamLayout L = ParamLayout::build(cfg);
  const Weights w = weights_of(cfg, 7);
  for (bool sharded : {false, true}) {
    SCOPED_TRACE(sharded ? "sharded" : "one file");
    testing::TestDir d;
    write_json(d.file("config.json"), llama_tiny_config());
    write_weights(d.path(), w, dt, sharded ? shard_by_layer : [](const std::string&) { return std::string(); });
    std::vector<std::vector<float>> groups;
    std::size_t bytes = 0;
    model_family(cfg).load_safetensors(d.path(), L, groups, [&](const void*, std::size_t n) { bytes += n; });
    for (std::size_t g = 0; g < L.groups.size(); ++g)
      for (const TensorSpec& t : L.groups[g].tensors) {
        const std::vector<float>& want = w.values.at(t.hf_name);
        for (std::size_t i = 0; i < want.size(); ++i)
          ASSERT_EQ(groups[g][t.offset + i], rounded(want[i], dt)) << t.hf_name << " " << i;
        for (std::size_t i = want.size(); i < t.count; ++i) ASSERT_EQ(groups[g][t.offset + i], 0.0f) << t.hf_name;
      }
    EXPECT_GT(bytes, L.total * safetensors_dtype_size(dt) * 9 / 10);  // every tensor's bytes were seen
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, HfWeights,
                         ::testing::Values(SafetensorsDType::F32, SafetensorsDType::F16, SafetensorsDType::BF16),
                         [](const auto& i) { return std::string(safetensors_dtype_name(i.param)); });

// What the family writes (--save-safetensors), read back: the same bits.
TEST(HfFolder, WhatTheFamilyWritesReadsBackBitForBit) {
  const ModelConfig cfg = model_family("llama").preset("llama-tiny");
  const ParamLayout L = ParamLayout::build(cfg);
  std::vector<std::vector<float>> groups(L.groups.size());
  for (std::size_t g = 0; g < L.groups.size(); ++g) model_family(cfg).init_group(cfg, L, 3, int(g), groups[g]);
  std::vector<const float*> ptrs;
  for (auto& g : groups) ptrs.push_back(g.data());
  testing::TestDir d;
  write_json(d.file("config.json"), llama_tiny_config());
  model_family(cfg).save_safetensors(d.file("model.safetensors"), L, ptrs, DType::f32);
  std::vector<std::vector<float>> back;
  model_family(cfg).load_safetensors(d.path(), L, back, {});
  EXPECT_EQ(back, groups);
}

class HostileFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    write_json(d.file("config.json"), llama_tiny_config());
    w = weights_of(cfg, 11);
  }
  std::string load_error() {
    std::vector<std::vector<float>> groups;
    return testing::error_message([&] { model_family(cfg).load_safetensors(d.path(), L, groups, {}); });
  }
  testing::TestDir d;
  ModelConfig cfg = model_family("llama").preset("llama-tiny");
  ParamLayout L = ParamLayout::build(cfg);
  Weights w;
};

TEST_F(HostileFolder, NoWeightsAtAll) {
  EXPECT_TRUE(has(load_error(), "has neither model.safetensors nor model.safetensors.index.json"));
}

TEST_F(HostileFolder, AnIndexNamingAMissingShardOrAFileOutsideTheFolder) {
  write_weights(d.path(), w, SafetensorsDType::F32, shard_by_layer);
  fs::remove(d.file("model-00002-of-00003.safetensors"));
  EXPECT_TRUE(has(load_error(), "names the shard model-00002-of-00003.safetensors"));
  write_weights(d.path(), w, SafetensorsDType::F32, shard_by_layer);
  json idx = json::parse(std::ifstream(d.file("model.safetensors.index.json")));
  idx["weight_map"]["model.norm.weight"] = "../elsewhere.safetensors";
  write_json(d.file("model.safetensors.index.json"), idx);
  EXPECT_TRUE(has(load_error(), "is '../elsewhere.safetensors', not the name of a file in the folder"));
}

TEST_F(HostileFolder, ATensorInTwoShardsOrWhereTheIndexDoesNotPutIt) {
  write_weights(d.path(), w, SafetensorsDType::F32, shard_by_layer);
  // Shard 3 also holds layer 0's input norm: the index puts that tensor in shard 1.
  write_safetensors(d.file("model-00003-of-00003.safetensors"),
                    {{"model.norm.weight", SafetensorsDType::F32, {64}, nullptr, w.values.at("model.norm.weight").data(), {}},
                     {"model.embed_tokens.weight", SafetensorsDType::F32, {256, 64}, nullptr,
                      w.values.at("model.embed_tokens.weight").data(), {}},
                     {"lm_head.weight", SafetensorsDType::F32, {256, 64}, nullptr, w.values.at("lm_head.weight").data(), {}},
                     {"model.layers.0.input_layernorm.weight", SafetensorsDType::F32, {64}, nullptr,
                      w.values.at("model.layers.0.input_layernorm.weight").data(), {}}});
  EXPECT_TRUE(has(load_error(), "holds 'model.layers.0.input_layernorm.weight', which the index puts in"));
}

// transformers loads model.safetensors when both it and an index are there; tierzero loaded the shards. A
// folder holding both, with an index naming other files, is refused naming both; an index naming only
// model.safetensors says the same as the file and is read.
TEST_F(HostileFolder, ASingleFileBesideAnIndexOfShardsIsRefusedNamingBoth) {
  write_weights(d.path(), w, SafetensorsDType::F32, shard_by_layer);
  write_weights(d.path(), w, SafetensorsDType::F32, [](const std::string&) { return std::string(); });
  const std::string m = load_error();
  EXPECT_TRUE(has(m, d.file("model.safetensors"))) << m;
  EXPECT_TRUE(has(m, d.file("model.safetensors.index.json"))) << m;
  EXPECT_TRUE(has(m, "holds both")) << m;
  fs::remove(d.file("model.safetensors"));
  std::vector<std::vector<float>> groups;
  EXPECT_NO_THROW(model_family(cfg).load_safetensors(d.path(), L, groups, {})) << "the shards alone load";
}

TEST_F(HostileFolder, AMissingExtraOrMisshapenTensor) {
  Weights less = w;
  less.values.erase("model.layers.1.mlp.up_proj.weight");
  write_weights(d.path(), less, SafetensorsDType::F32, [](const std::string&) { return std::string(); });
  EXPECT_TRUE(has(load_error(), "tensor 'model.layers.1.mlp.up_proj.weight' is missing from"));
  Weights more = w;
  more.values["model.layers.2.mlp.up_proj.weight"] = {1, 2};
  more.shapes["model.layers.2.mlp.up_proj.weight"] = {2};
  write_weights(d.path(), more, SafetensorsDType::F32, [](const std::string&) { return std::string(); });
  EXPECT_TRUE(has(load_error(), "holds 'model.layers.2.mlp.up_proj.weight', which this model does not have"));
  // config.json and the weights disagree: the config says 8 wide k heads of 16 are 2, the file has 4.
  Weights wide = w;
  wide.values["model.layers.0.self_attn.k_proj.weight"].resize(64 * 64);
  wide.shapes["model.layers.0.self_attn.k_proj.weight"] = {64, 64};
  write_weights(d.path(), wide, SafetensorsDType::F32, [](const std::string&) { return std::string(); });
  EXPECT_TRUE(has(load_error(), "'model.layers.0.self_attn.k_proj.weight' in " + d.file("model.safetensors") +
                                    " has shape [64, 64] but config.json's model needs [32, 64]"));
}

TEST_F(HostileFolder, NanWeightsAndAnUntiedHeadInATiedModel) {
  w.values["model.norm.weight"][5] = NAN;
  write_weights(d.path(), w, SafetensorsDType::F32, [](const std::string&) { return std::string(); });
  EXPECT_TRUE(has(load_error(), "tensor 'model.norm.weight' in " + d.file("model.safetensors") + " holds nan at element 5"));
  cfg.tied_head = true;
  L = ParamLayout::build(cfg);
  w = weights_of(cfg, 12);
  std::vector<float> head = w.values.at("model.embed_tokens.weight");
  head[7] += 1;
  w.values["lm_head.weight"] = head;
  w.shapes["lm_head.weight"] = {256, 64};
  write_weights(d.path(), w, SafetensorsDType::F32, [](const std::string&) { return std::string(); });
  EXPECT_TRUE(has(load_error(), "'lm_head.weight' in " + d.path() + " differs from 'model.embed_tokens.weight' at element 7"));
}

TEST_F(HostileFolder, AFifoOrDevZeroAsAShard) {
  write_weights(d.path(), w, SafetensorsDType::F32, shard_by_layer);
  const std::string shard = d.file("model-00002-of-00003.safetensors");
  fs::remove(shard);
  ASSERT_EQ(::mkfifo(shard.c_str(), 0600), 0);
  EXPECT_TRUE(has(load_error(), shard + "' is not a regular file (a FIFO)")) << load_error();
  fs::remove(shard);
  fs::create_symlink("/dev/zero", shard);
  EXPECT_TRUE(has(load_error(), shard + "' is not a regular file (a character device)")) << load_error();
}

}  // namespace
}  // namespace tz
