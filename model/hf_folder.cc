// Reading Hugging Face model folders (see hf_folder.h).
#include "model/hf_folder.h"

#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include "core/error.h"
#include "model/file_io.h"
#include "model/json_bounded.h"
#include "model/model_family.h"
#include "model/safetensors_reader.h"

namespace tz {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kMaxConfigBytes = 1 << 20;   // config.json files are a few KiB
constexpr std::uint64_t kMaxIndexBytes = 64 << 20;   // 70B models' indexes are ~60 KiB

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  return os.str() + "]";
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool is_hf_folder(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

nlohmann::json read_hf_config_json(const std::string& dir) {
  const std::string path = (fs::path(dir) / "config.json").string();
  std::error_code ec;
  TZ_CHECK(fs::exists(path, ec), "the model folder ", dir,
           " has no config.json: --init-from takes a folder as Hugging Face's save_pretrained writes it "
           "(config.json and model.safetensors), or a GPT-2 safetensors file");
  const nlohmann::json j = parse_json_bounded(read_small_file(path, "config.json", kMaxConfigBytes), path);
  TZ_CHECK(j.is_object(), path, " is not a JSON object");
  TZ_CHECK(j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
               j["architectures"][0].is_string(),
           path, " has no \"architectures\" list naming the model class (e.g. [\"LlamaForCausalLM\"])");
  return j;
}

ModelConfig read_hf_config(const std::string& dir) {
  const std::string path = (fs::path(dir) / "config.json").string();
  const nlohmann::json j = read_hf_config_json(dir);
  const std::string arch = j["architectures"][0].get<std::string>();
  std::string known;
  for (const std::string& name : model_family_names()) {
    const ModelFamily& f = model_family(name);
    for (const std::string& a : f.hf_architectures()) {
      if (a == arch) {
        ModelConfig c = f.config_from_hf(j, path);
        try {
          c.validate();
        } catch (const Error& e) {
          TZ_FAIL(path, " describes a model this build cannot hold: ", e.what());
        }
        return c;
      }
      known += (known.empty() ? "" : ", ") + a;
    }
  }
  TZ_FAIL(path, ": architecture '", arch.substr(0, 128), "' is not one tierzero trains (", known, ")");
}

HfWeightFiles hf_weight_files(const std::string& dir) {
  const fs::path root(dir);
  const std::string single = (root / "model.safetensors").string(), index = (root / "model.safetensors.index.json").string();
  std::error_code ec;
  HfWeightFiles w;
  if (!fs::exists(index, ec)) {
    TZ_CHECK(fs::exists(single, ec), "the model folder ", dir,
             " has neither model.safetensors nor model.safetensors.index.json (pytorch_model.bin files are not "
             "read: save the model with safe_serialization=True)");
    w.files.push_back(single);
    return w;
  }
  const nlohmann::json j = parse_json_bounded(read_small_file(index, "the safetensors index", kMaxIndexBytes), index);
  TZ_CHECK(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(), index,
           " has no \"weight_map\" object (tensor name -> shard file)");
  std::map<std::string, std::size_t> file_of;
  for (const auto& [tensor, file] : j["weight_map"].items()) {
    TZ_CHECK(file.is_string(), index, ": weight_map[\"", tensor.substr(0, 128), "\"] is not a file name");
    const std::string name = file.get<std::string>();
    // A shard is a file of the folder: no path, no way out of it.
    TZ_CHECK(!name.empty() && name.find('/') == std::string::npos && name != "." && name != "..", index,
             ": weight_map[\"", tensor.substr(0, 128), "\"] is '", name.substr(0, 128),
             "', not the name of a file in the folder");
    auto [it, fresh] = file_of.emplace(name, w.files.size());
    if (fresh) {
      const std::string path = (root / name).string();
      TZ_CHECK(fs::exists(path, ec), index, " names the shard ", name, " (for ", tensor.substr(0, 128),
               "), which is not in ", dir);
      w.files.push_back(path);
    }
    w.index[tensor] = it->second;
  }
  TZ_CHECK(!w.files.empty(), index, " names no tensors");
  return w;
}

void load_hf_tensors(const std::string& path, const ParamLayout& layout, std::vector<std::vector<float>>& groups,
                     const SeenBytes& seen, const std::vector<std::string>& ignored, const std::vector<HfTie>& ties) {
  HfWeightFiles w;
  if (is_hf_folder(path))
    w = hf_weight_files(path);
  else
    w.files.push_back(path);
  groups.resize(layout.groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) groups[g].assign(layout.groups[g].count, 0.0f);
  std::map<std::string, std::pair<int, const TensorSpec*>> by_hf;
  for (std::size_t g = 0; g < layout.groups.size(); ++g)
    for (const TensorSpec& t : layout.groups[g].tensors) by_hf[t.hf_name] = {int(g), &t};

  std::map<std::string, std::string> loaded;  // hf name -> the file it came from
  std::map<std::string, std::vector<float>> tied;  // tie name -> its values, checked after
  for (std::size_t f = 0; f < w.files.size(); ++f) {
    const SafetensorsReader r(w.files[f]);
    if (seen) {
      const std::string header = r.header_bytes();
      seen(header.data(), header.size());
    }
    for (const SafetensorsTensor& t : r.tensors()) {
      bool skip = false;
      for (const std::string& s : ignored) skip |= ends_with(t.name, s);
      if (skip) continue;
      if (!w.index.empty()) {
        auto it = w.index.find(t.name);
        TZ_CHECK(it != w.index.end() && it->second == f, w.files[f], " holds '", t.name, "', which ",
                 it == w.index.end() ? std::string("the index does not list")
                                     : "the index puts in " + w.files[it->second],
                 ": the folder's index and its shards disagree");
      }
      auto [prev, fresh] = loaded.emplace(t.name, w.files[f]);
      TZ_CHECK(fresh, "tensor '", t.name, "' is in both ", prev->second, " and ", w.files[f]);
      TZ_CHECK(t.dtype == SafetensorsDType::F32 || t.dtype == SafetensorsDType::F16 || t.dtype == SafetensorsDType::BF16,
               "tensor '", t.name, "' in ", w.files[f], " is ", safetensors_dtype_name(t.dtype),
               "; weights must be F32, F16 or BF16");
      const HfTie* tie = nullptr;
      for (const HfTie& x : ties) tie = x.name == t.name ? &x : tie;
      const TensorSpec* spec = nullptr;
      int g = -1;
      if (tie) {
        spec = by_hf.at(tie->tied_to).second;
      } else {
        auto it = by_hf.find(t.name);
        TZ_CHECK(it != by_hf.end(), w.files[f], " holds '", t.name,
                 "', which this model does not have: does config.json describe these weights?");
        g = it->second.first, spec = it->second.second;
      }
      TZ_CHECK(t.shape == spec->hf_shape, "tensor '", t.name, "' in ", w.files[f], " has shape ", shape_text(t.shape),
               " but config.json's model needs ", shape_text(spec->hf_shape));
      std::vector<float> own;
      float* values = tie ? (own.resize(t.count()), own.data()) : groups[g].data() + spec->offset;
      r.read_f32(t, values, seen);
      for (std::size_t i = 0, n = t.count(); i < n; ++i)
        TZ_CHECK(std::isfinite(values[i]), "tensor '", t.name, "' in ", w.files[f], " holds ", values[i],
                 " at element ", i, ": a model with NaN or Inf weights cannot be trained from");
      if (tie) tied[t.name] = std::move(own);
    }
  }
  for (const auto& [tensor, file] : w.index) {
    bool skip = false;
    for (const std::string& s : ignored) skip |= ends_with(tensor, s);
    TZ_CHECK(skip || loaded.count(tensor), "the index of ", path, " puts '", tensor.substr(0, 128), "' in ",
             w.files[file], ", which does not hold it");
  }
  for (const auto& [hf, where] : by_hf)
    TZ_CHECK(loaded.count(hf), "tensor '", hf, "' is missing from ", path, ": does config.json describe these weights?");
  for (const HfTie& t : ties) {
    auto it = tied.find(t.name);
    if (it == tied.end()) continue;
    const auto [g, spec] = by_hf.at(t.tied_to);
    for (std::size_t i = 0; i < it->second.size(); ++i)
      TZ_CHECK(it->second[i] == groups[g][spec->offset + i], "'", t.name, "' in ", path, " differs from '",
               t.tied_to, "' at element ", i, " but config.json ties them (tie_word_embeddings)");
  }
}

}  // namespace tz
