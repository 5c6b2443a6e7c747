// Hugging Face model folders out (model/hf_folder_writer.h): each family's config.json read back as the
// same shape; shards split as transformers splits them, with their index; a folder read and written back
// in its own dtype gives the same tensors bit for bit (F32, F16, BF16; one file and shards); the
// tokenizer's files copied; and the refusals: a non-empty or protected folder, a FIFO as a side file,
// non-finite weights, an unwritable place; nothing left behind by a failed or abandoned write.
#include "model/hf_folder_writer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "core/error.h"
#include "model/hf_folder.h"
#include "model/model_family.h"
#include "model/protected_inputs.h"
#include "model/safetensors_reader.h"
#include "tests/common/error_message.h"
#include "tests/common/hf_test_folder.h"
#include "tests/common/test_dir.h"

namespace tz {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

json read_json(const std::string& path) { return json::parse(slurp(path)); }

// Every entry of a folder, names only.
std::set<std::string> entries(const std::string& dir) {
  std::set<std::string> s;
  for (const auto& e : fs::directory_iterator(dir)) s.insert(e.path().filename().string());
  return s;
}

// Every tensor of a folder's weight files: name -> (dtype, shape, raw bytes).
struct RawTensor {
  SafetensorsDType dtype;
  std::vector<std::int64_t> shape;
  std::string bytes;
  bool operator==(const RawTensor&) const = default;
};
std::map<std::string, RawTensor> raw_tensors(const std::string& dir) {
  std::map<std::string, RawTensor> out;
  for (const std::string& f : hf_weight_files(dir).files) {
    SafetensorsReader r(f);
    EXPECT_EQ(r.metadata(), (std::map<std::string, std::string>{{"format", "pt"}})) << f;
    for (const SafetensorsTensor& t : r.tensors()) {
      std::string b(t.nbytes(), '\0');
      r.read_raw(t, b.data());
      EXPECT_TRUE(out.emplace(t.name, RawTensor{t.dtype, t.shape, b}).second) << t.name << " twice";
    }
  }
  return out;
}

std::vector<std::vector<float>> seeded_groups(const ModelConfig& cfg, const ParamLayout& L) {
  std::vector<std::vector<float>> groups(L.groups.size());
  for (std::size_t g = 0; g < L.groups.size(); ++g) model_family(cfg).init_group(cfg, L, 5, int(g), groups[g]);
  return groups;
}

void write_folder(const std::string& dir, const ModelConfig& cfg, const std::vector<std::vector<float>>& groups,
                  HfFolderOptions opt) {
  const ParamLayout L = ParamLayout::build(cfg);
  HfFolderWriter w(dir, L, std::move(opt));
  for (std::size_t g = 0; g < groups.size(); ++g) w.put_group(int(g), groups[g].data());
  w.commit();
}

// config.json out, read back: the same shape, for every preset of both families and the variants the
// architectures differ in.
TEST(HfConfigOut, ReadsBackAsTheSameShape) {
  std::vector<ModelConfig> cfgs;
  for (const std::string& fam : {"gpt2", "llama"})
    for (const std::string& p : model_family(fam).preset_names()) cfgs.push_back(model_family(fam).preset(p));
  ModelConfig biased = model_family("llama").preset("llama-tiny");
  biased.qkv_bias = biased.o_bias = biased.mlp_bias = true;
  ModelConfig windowed = model_family("llama").preset("mistral-7b");
  windowed.sliding_window = 4096;
  ModelConfig qwen_windowed = model_family("llama").preset("qwen2.5-0.5b");
  qwen_windowed.sliding_window = 32768;
  cfgs.insert(cfgs.end(), {biased, windowed, qwen_windowed});
  for (const ModelConfig& c : cfgs) {
    const json j = model_family(c).hf_config(c);
    const ModelConfig back = model_family(c).config_from_hf(j, "config.json");
    EXPECT_EQ(back, c) << c.describe() << "\n" << j.dump();
  }
  EXPECT_EQ(model_family("llama").hf_config(model_family("llama").preset("qwen2.5-7b"))["architectures"][0],
            "Qwen2ForCausalLM");
  EXPECT_EQ(model_family("llama").hf_config(windowed)["architectures"][0], "MistralForCausalLM");
  EXPECT_EQ(model_family("llama").hf_config(biased)["architectures"][0], "LlamaForCausalLM");
  EXPECT_EQ(model_family("gpt2").hf_config(model_preset("gpt2"))["architectures"][0], "GPT2LMHeadModel");
}

TEST(HfConfigOut, RefusesShapesNoArchitectureHolds) {
  ModelConfig c = model_family("llama").preset("llama-tiny");
  c.o_bias = true;  // o bias without q/k/v biases
  EXPECT_TRUE(has(testing::error_message([&] { model_family(c).hf_config(c); }), "has no Hugging Face architecture"));
  c.o_bias = false, c.qkv_bias = true, c.mlp_bias = true;  // Qwen2's biases and MLP biases
  EXPECT_TRUE(has(testing::error_message([&] { model_family(c).hf_config(c); }), "has no Hugging Face architecture"));
}

// transformers' rule: tensors in order, a new shard when the next one would overflow; one larger than the
// limit alone.
TEST(HfShards, SplitInOrderAtTheLimit) {
  const ModelConfig cfg = model_family("llama").preset("llama-tiny");
  const ParamLayout L = ParamLayout::build(cfg);
  std::vector<std::uint64_t> bytes;
  for (const auto& g : L.groups)
    for (const auto& t : g.tensors) bytes.push_back(safetensors_bytes({t.hf_name, SafetensorsDType::BF16, t.hf_shape}));
  const std::uint64_t limit = 30000;  // the embedding and the head (256 x 64 x 2 = 32 KiB) are larger
  const HfShardPlan p = plan_hf_shards(L, DType::bf16, limit);
  ASSERT_EQ(p.shard_of.size(), bytes.size());
  std::vector<std::uint64_t> size(p.files.size(), 0), count(p.files.size(), 0);
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i > 0) {
      EXPECT_TRUE(p.shard_of[i] == p.shard_of[i - 1] || p.shard_of[i] == p.shard_of[i - 1] + 1);
      // A new shard starts only when this tensor would not fit the previous one.
      if (p.shard_of[i] != p.shard_of[i - 1]) EXPECT_GT(size[p.shard_of[i - 1]] + bytes[i], limit) << i;
    }
    size[p.shard_of[i]] += bytes[i];
    ++count[p.shard_of[i]];
    total += bytes[i];
  }
  for (std::size_t k = 0; k < size.size(); ++k) EXPECT_TRUE(size[k] <= limit || count[k] == 1) << k << ": " << size[k];
  EXPECT_EQ(count[0], 1u);  // the embedding alone
  EXPECT_EQ(count[1], 1u);  // the head alone
  EXPECT_EQ(p.total_bytes, total);
  ASSERT_GE(p.files.size(), 3u);
  char last[64];
  std::snprintf(last, sizeof last, "model-%05zu-of-%05zu.safetensors", p.files.size(), p.files.size());
  EXPECT_EQ(p.files.back(), last);
  EXPECT_TRUE(p.files[0].starts_with("model-00001-of-000")) << p.files[0];
  EXPECT_EQ(plan_hf_shards(L, DType::bf16, kHfShardBytes).files, std::vector<std::string>{"model.safetensors"});
}

// A folder read and written back with no step: the same tensors bit for bit in its own dtype.
struct RoundTrip {
  SafetensorsDType dtype;
  bool sharded;
};
class HfRoundTrip : public ::testing::TestWithParam<RoundTrip> {};

TEST_P(HfRoundTrip, GivesTheSameBits) {
  const auto [sd, sharded] = GetParam();
  const ModelConfig cfg = model_family("llama").preset("llama-tiny");
  const ParamLayout L = ParamLayout::build(cfg);
  testing::TestDir in, out;
  test::write_json(in.file("config.json"), test::llama_tiny_config());
  const test::Weights w = test::weights_of(cfg, 21);
  test::write_weights(in.path(), w, sd, [&](const std::string& n) {
    return !sharded ? "" : n.starts_with("model.layers.1.") ? "model-00002-of-00002.safetensors"
                                                            : "model-00001-of-00002.safetensors";
  });
  std::ofstream(in.file("tokenizer.json")) << "{\"version\": \"1.0\", \"model\": {}}";
  std::ofstream(in.file("generation_config.json")) << "{\"do_sample\": true}";
  std::vector<std::vector<float>> groups;
  model_family(cfg).load_safetensors(in.path(), L, groups, {});
  const DType dt = sd == SafetensorsDType::F32 ? DType::f32 : sd == SafetensorsDType::BF16 ? DType::bf16 : DType::f16;
  HfFolderOptions opt;
  opt.dtype = dt;
  opt.shard_bytes = sharded ? 40000 : kHfShardBytes;
  opt.config = read_json(in.file("config.json"));
  opt.copy_from = in.path();
  const std::string dir = out.file("saved");
  write_folder(dir, cfg, groups, opt);

  EXPECT_EQ(raw_tensors(dir), raw_tensors(in.path()));
  json config = read_json(dir + "/config.json");
  EXPECT_EQ(config["torch_dtype"], sd == SafetensorsDType::F32 ? "float32" : sd == SafetensorsDType::BF16 ? "bfloat16" : "float16");
  config["torch_dtype"] = "float32";
  EXPECT_EQ(config, test::llama_tiny_config());  // every other field the input's
  EXPECT_EQ(slurp(dir + "/tokenizer.json"), slurp(in.file("tokenizer.json")));
  EXPECT_EQ(slurp(dir + "/generation_config.json"), slurp(in.file("generation_config.json")));
  EXPECT_EQ(read_hf_config(dir), cfg);
  const std::set<std::string> files = entries(dir);
  EXPECT_EQ(files.count("model.safetensors.index.json"), sharded ? 1u : 0u);
  if (sharded) {
    const json index = read_json(dir + "/model.safetensors.index.json");
    std::uint64_t total = 0;
    for (const auto& f : hf_weight_files(dir).files) {
      SafetensorsReader r(f);
      for (const auto& t : r.tensors()) {
        total += t.nbytes();
        EXPECT_EQ(index["weight_map"][t.name], fs::path(f).filename().string()) << t.name;
      }
    }
    EXPECT_EQ(index["metadata"]["total_size"].get<std::uint64_t>(), total);
    EXPECT_EQ(index["weight_map"].size(), raw_tensors(dir).size());
  }
  // Nothing but the folder itself is left beside it.
  EXPECT_EQ(entries(out.path()), std::set<std::string>{"saved"});
}

INSTANTIATE_TEST_SUITE_P(Dtypes, HfRoundTrip,
                         ::testing::Values(RoundTrip{SafetensorsDType::F32, false}, RoundTrip{SafetensorsDType::F32, true},
                                           RoundTrip{SafetensorsDType::F16, false}, RoundTrip{SafetensorsDType::F16, true},
                                           RoundTrip{SafetensorsDType::BF16, false},
                                           RoundTrip{SafetensorsDType::BF16, true}),
                         [](const auto& i) {
                           return std::string(safetensors_dtype_name(i.param.dtype)) + (i.param.sharded ? "Sharded" : "Single");
                         });

// fp32 values written as bf16 round to nearest even, as the converter does; a tied model has no lm_head.
TEST(HfFolderWriter, ConvertsAndDropsPaddedRows) {
  const ModelConfig cfg = model_family("llama").preset("qwen2.5-0.5b");
  ModelConfig small = cfg;
  small.n_layer = 1, small.n_embd = 32, small.n_head = 2, small.n_kv_head = 1, small.head_dim = 16;
  small.ffn_dim = 48, small.vocab_size = 300, small.padded_vocab_size = ModelConfig::pad_vocab(300);
  const ParamLayout L = ParamLayout::build(small);
  const auto groups = seeded_groups(small, L);
  testing::TestDir out;
  HfFolderOptions opt;
  opt.dtype = DType::bf16;
  opt.config = model_family(small).hf_config(small);
  write_folder(out.file("m"), small, groups, opt);
  SafetensorsReader r(out.file("m/model.safetensors"));
  EXPECT_EQ(r.find("lm_head.weight"), nullptr);
  const SafetensorsTensor* emb = r.find("model.embed_tokens.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->shape, (std::vector<std::int64_t>{300, 32}));
  std::vector<std::uint16_t> bits(emb->count());
  r.read_raw(*emb, bits.data());
  for (std::size_t i = 0; i < bits.size(); ++i) ASSERT_EQ(bits[i], float_to_bf16(groups[0][i]).bits) << i;
  EXPECT_EQ(read_hf_config(out.file("m")), small);
  EXPECT_EQ(read_json(out.file("m/config.json"))["torch_dtype"], "bfloat16");
}

class HfFolderRefusal : public ::testing::Test {
 protected:
  void SetUp() override {
    opt.config = model_family(cfg).hf_config(cfg);
    groups = seeded_groups(cfg, L);
  }
  std::string write_error(const std::string& dir) {
    return testing::error_message([&] { write_folder(dir, cfg, groups, opt); });
  }
  ModelConfig cfg = model_family("llama").preset("llama-tiny");
  ParamLayout L = ParamLayout::build(cfg);
  std::vector<std::vector<float>> groups;
  HfFolderOptions opt;
  testing::TestDir d;
};

TEST_F(HfFolderRefusal, ANonEmptyFolderIsLeftAsItIs) {
  fs::create_directory(d.file("out"));
  std::ofstream(d.file("out/notes.txt")) << "mine";
  const std::string m = write_error(d.file("out"));
  EXPECT_TRUE(has(m, "--save-hf '" + d.file("out") + "' is not empty")) << m;
  EXPECT_EQ(entries(d.file("out")), std::set<std::string>{"notes.txt"});
  EXPECT_EQ(entries(d.path()), std::set<std::string>{"out"});
}

TEST_F(HfFolderRefusal, AnEmptyFolderOrAMissingParentIsFine) {
  fs::create_directory(d.file("empty"));
  write_folder(d.file("empty/"), cfg, groups, opt);
  EXPECT_EQ(entries(d.file("empty")), (std::set<std::string>{"config.json", "model.safetensors"}));
  write_folder(d.file("a/b/c"), cfg, groups, opt);
  EXPECT_EQ(entries(d.file("a/b/c")), (std::set<std::string>{"config.json", "model.safetensors"}));
}

TEST_F(HfFolderRefusal, AFileAProtectedInputOrAnUncreatablePlace) {
  std::ofstream(d.file("file")) << "x";
  std::string m = write_error(d.file("file"));
  EXPECT_TRUE(has(m, "--save-hf")) << m;
  EXPECT_EQ(slurp(d.file("file")), "x");
  fs::create_directory(d.file("input"));
  const ProtectedInput input(d.file("input"), "--init-from");
  m = write_error(d.file("input/out"));
  EXPECT_TRUE(has(m, "--init-from")) << m;
  EXPECT_FALSE(fs::exists(d.file("input/out")));
  m = write_error("/proc/self/no/such/place");
  EXPECT_TRUE(has(m, "--save-hf '/proc/self/no/such/place'")) << m;
}

TEST_F(HfFolderRefusal, AFifoAsATokenizerFileBeforeAnythingIsWritten) {
  fs::create_directory(d.file("src"));
  ASSERT_EQ(::mkfifo(d.file("src/tokenizer.json").c_str(), 0600), 0);
  opt.copy_from = d.file("src");
  const std::string m = write_error(d.file("out"));
  EXPECT_TRUE(has(m, "'" + d.file("src/tokenizer.json") + "' is not a regular file")) << m;
  EXPECT_EQ(entries(d.path()), std::set<std::string>{"src"});
}

TEST_F(HfFolderRefusal, NonFiniteWeightsLeaveNothing) {
  groups[2][7] = std::numeric_limits<float>::quiet_NaN();
  opt.shard_bytes = 30000;  // the first shards are complete when the NaN comes
  const std::string m = write_error(d.file("out"));
  EXPECT_TRUE(has(m, "the weights of block.1")) << m;
  EXPECT_TRUE(entries(d.path()).empty());
}

TEST_F(HfFolderRefusal, AnAbandonedWriteLeavesNothing) {
  {
    HfFolderWriter w(d.file("out"), L, opt);
    w.put_group(0, groups[0].data());
    EXPECT_TRUE(has(testing::error_message([&] { w.put_group(2, groups[2].data()); }), "group 2 given when group 1"));
    const std::size_t first = L.groups[0].tensors.size(), all = L.groups[0].tensors.size() +
                                  L.groups[1].tensors.size() * 2 + L.groups[3].tensors.size();
    EXPECT_TRUE(has(testing::error_message([&] { w.commit(); }),
                    "committed after " + std::to_string(first) + " of its " + std::to_string(all) + " tensors"));
  }
  EXPECT_TRUE(entries(d.path()).empty());
}

}  // namespace
}  // namespace tz
