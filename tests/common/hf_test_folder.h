// Hugging Face model folders for tests: llama-tiny's config.json as transformers writes it, seeded weights
// by Hugging Face's names, and those weights written into one file or shards with an index.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/param_layout.h"
#include "model/safetensors_writer.h"
#include "tests/common/random.h"

namespace tz::test {

using nlohmann::json;

// llama-tiny's shape as transformers' LlamaConfig writes it.
inline json llama_tiny_config() {
  return {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"hidden_size", 64},
          {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"head_dim", 16},
          {"intermediate_size", 160}, {"vocab_size", 256}, {"max_position_embeddings", 64}, {"rms_norm_eps", 1e-5},
          {"rope_theta", 10000.0}, {"rope_scaling", nullptr}, {"tie_word_embeddings", false},
          {"attention_bias", false}, {"mlp_bias", false}, {"hidden_act", "silu"}, {"torch_dtype", "float32"}};
}

inline void write_json(const std::string& path, const json& j) { std::ofstream(path) << j.dump(2); }

// Every tensor of cfg's layout with seeded values, by Hugging Face name and shape.
struct Weights {
  std::map<std::string, std::vector<float>> values;
  std::map<std::string, std::vector<std::int64_t>> shapes;
};

inline Weights weights_of(const ModelConfig& cfg, std::uint64_t seed) {
  const ParamLayout L = ParamLayout::build(cfg);
  Rng rng(seed);
  Weights w;
  for (const auto& g : L.groups)
    for (const TensorSpec& t : g.tensors) {
      std::size_t n = 1;
      for (auto d : t.hf_shape) n *= std::size_t(d);
      w.values[t.hf_name] = rng.floats(n);
      w.shapes[t.hf_name] = t.hf_shape;
    }
  return w;
}

// Writes the weights into files: shard_of(name) picks the file ("" for model.safetensors alone), and
// an index is written when there is more than one.
inline void write_weights(const std::string& dir, const Weights& w, SafetensorsDType dtype,
                   const std::function<std::string(const std::string&)>& shard_of) {
  std::map<std::string, std::vector<SafetensorsWriteTensor>> files;
  json map = json::object();
  for (const auto& [name, v] : w.values) {
    const std::string f = shard_of(name);
    files[f.empty() ? "model.safetensors" : f].push_back({name, dtype, w.shapes.at(name), nullptr, v.data(), {}});
    map[name] = f.empty() ? "model.safetensors" : f;
  }
  for (auto& [f, tensors] : files) write_safetensors(dir + "/" + f, std::move(tensors), {{"format", "pt"}});
  if (files.size() > 1) write_json(dir + "/model.safetensors.index.json", {{"metadata", {{"total_size", 0}}}, {"weight_map", map}});
}

}  // namespace tz::test
