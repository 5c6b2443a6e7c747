// --init-from streams (ModelFamily::open_weights): reading a Llama folder group by group, as the engine's
// initialisation does, never holds more than one group's fp32 values (plus the reader's fixed staging),
// measured by an allocation hook: this binary's operator new and delete count the bytes alive. A whole-
// model load would hold all of them. The values are the whole-model load's, bit for bit; and a NaN is
// found when its group is read, naming the tensor.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>

#include "core/error.h"
#include "model/model_family.h"
#include "tests/common/error_message.h"
#include "tests/common/hf_test_folder.h"
#include "tests/common/test_dir.h"

namespace {

// Bytes alive through operator new, and the most alive since the last reset.
std::atomic<std::size_t> g_live{0}, g_peak{0};

void* counted_alloc(std::size_t n) {
  void* p = std::malloc(n + 16);
  if (!p) throw std::bad_alloc();
  *static_cast<std::size_t*>(p) = n;
  const std::size_t now = g_live.fetch_add(n) + n;
  std::size_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
  return static_cast<char*>(p) + 16;
}

void counted_free(void* p) {
  if (!p) return;
  char* base = static_cast<char*>(p) - 16;
  g_live.fetch_sub(*reinterpret_cast<std::size_t*>(base));
  std::free(base);
}

}  // namespace

void* operator new(std::size_t n) { return counted_alloc(n); }
void* operator new[](std::size_t n) { return counted_alloc(n); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }

namespace tz {
namespace {

// llama-tiny widened to 24 blocks of about 4 MiB in fp32 (100 MiB in all), in three BF16 shards.
struct Folder {
  testing::TestDir dir;
  ModelConfig cfg;
  ParamLayout layout;
  Folder() {
    test::json j = test::llama_tiny_config();
    j["num_hidden_layers"] = 24, j["hidden_size"] = 256, j["num_attention_heads"] = 4, j["num_key_value_heads"] = 4;
    j["head_dim"] = 64, j["intermediate_size"] = 1024;
    test::write_json(dir.file("config.json"), j);
    cfg = model_family("llama").config_from_hf(j, "config.json");
    layout = ParamLayout::build(cfg);
    const test::Weights w = test::weights_of(cfg, 7);
    test::write_weights(dir.path(), w, SafetensorsDType::BF16, [](const std::string& n) {
      const bool late = n.starts_with("model.layers.1") || n.starts_with("model.layers.2");
      return n.starts_with("model.layers.") ? (late ? "model-00003-of-00003.safetensors" : "model-00002-of-00003.safetensors")
                                            : "model-00001-of-00003.safetensors";
    });
  }
};

TEST(WeightStream, HoldsOneGroupAtATime) {
  Folder f;
  std::size_t largest = 0, model = 0;
  for (const GroupSpec& g : f.layout.groups) largest = std::max(largest, g.count * sizeof(float)), model += g.count * sizeof(float);
  const std::size_t allowance = std::size_t(8) << 20;  // the reader's staging and headers
  ASSERT_GT(model, 4 * (largest + allowance)) << "too small a model to tell a whole load apart";

  std::vector<std::vector<float>> whole;
  const std::size_t before_whole = g_live.load();
  g_peak = before_whole;
  model_family(f.cfg).load_safetensors(f.dir.path(), f.layout, whole, {});
  const std::size_t whole_peak = g_peak.load() - before_whole;

  const std::size_t before = g_live.load();
  g_peak = before;
  std::vector<float> values;
  std::size_t mismatches = 0;
  {
    auto source = model_family(f.cfg).open_weights(f.dir.path(), f.layout, {});
    for (std::size_t g = 0; g < f.layout.groups.size(); ++g) {
      source->read_group(int(g), values);
      ASSERT_EQ(values.size(), whole[g].size()) << g;
      for (std::size_t i = 0; i < values.size(); ++i)
        mismatches += std::memcmp(&values[i], &whole[g][i], sizeof(float)) != 0;
    }
  }
  const std::size_t stream_peak = g_peak.load() - before;
  EXPECT_EQ(mismatches, 0u);
  std::printf("model %zu bytes in fp32, largest group %zu; peak alive while streaming %zu, loading whole %zu\n", model,
              largest, stream_peak, whole_peak);
  EXPECT_LE(stream_peak, largest + allowance);
  EXPECT_GE(whole_peak, model);  // the hook sees a whole load
}

TEST(WeightStream, ANanIsFoundWithItsGroupNamingTheTensor) {
  testing::TestDir d;
  const ModelConfig cfg = model_family("llama").preset("llama-tiny");
  const ParamLayout L = ParamLayout::build(cfg);
  test::write_json(d.file("config.json"), test::llama_tiny_config());
  test::Weights w = test::weights_of(cfg, 9);
  w.values.at("model.layers.1.mlp.up_proj.weight")[5] = std::nanf("");
  test::write_weights(d.path(), w, SafetensorsDType::F32, [](const std::string&) { return ""; });
  auto source = model_family(cfg).open_weights(d.path(), L, {});
  std::vector<float> values;
  source->read_group(0, values);
  source->read_group(1, values);  // block 0: fine
  const std::string m = testing::error_message([&] { source->read_group(2, values); });
  EXPECT_NE(m.find("tensor 'model.layers.1.mlp.up_proj.weight'"), std::string::npos) << m;
  EXPECT_NE(m.find("at element 5"), std::string::npos) << m;
}

}  // namespace
}  // namespace tz
