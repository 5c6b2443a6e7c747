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
  // transformers takes model.safetensors when it is there: a folder that also has an index of other files
  // holds two models, and which one is meant cannot be known.
  const bool only_single = w.files.size() == 1 && fs::path(w.files[0]).filename() == "model.safetensors";
  TZ_CHECK(!fs::exists(single, ec) || only_single, "the model folder ", dir, " holds both ", single, " and ", index,
           ", which names ", w.files.size(), " file", w.files.size() == 1 ? "" : "s",
           ": transformers would load the single file, the index says the shards; remove the one that is not the "
           "model");
  return w;
}

HfWeightReader::HfWeightReader(const std::string& path, const ParamLayout& layout, const SeenBytes& seen,
                               const std::vector<std::string>& ignored, const std::vector<HfTie>& ties)
    : path_(path), layout_(layout), seen_(seen), ties_(ties) {
  HfWeightFiles w;
  if (is_hf_folder(path))
    w = hf_weight_files(path);
  else
    w.files.push_back(path);
  std::map<std::string, const TensorSpec*> by_hf;
  for (const GroupSpec& g : layout_.groups)
    for (const TensorSpec& t : g.tensors) by_hf[t.hf_name] = &t;
  for (std::size_t f = 0; f < w.files.size(); ++f) {
    files_.push_back(std::make_unique<SafetensorsReader>(w.files[f]));
    const SafetensorsReader& r = *files_.back();
    if (seen_) {
      const std::string header = r.header_bytes();
      seen_(header.data(), header.size());
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
      auto [prev, fresh] = where_.emplace(t.name, Where{f, &t});
      TZ_CHECK(fresh, "tensor '", t.name, "' is in both ", w.files[prev->second.file], " and ", w.files[f]);
      TZ_CHECK(t.dtype == SafetensorsDType::F32 || t.dtype == SafetensorsDType::F16 || t.dtype == SafetensorsDType::BF16,
               "tensor '", t.name, "' in ", w.files[f], " is ", safetensors_dtype_name(t.dtype),
               "; weights must be F32, F16 or BF16");
      const HfTie* tie = nullptr;
      for (const HfTie& x : ties_) tie = x.name == t.name ? &x : tie;
      auto it = by_hf.find(tie ? tie->tied_to : t.name);
      TZ_CHECK(it != by_hf.end(), w.files[f], " holds '", t.name,
               "', which this model does not have: does config.json describe these weights?");
      TZ_CHECK(t.shape == it->second->hf_shape, "tensor '", t.name, "' in ", w.files[f], " has shape ",
               shape_text(t.shape), " but config.json's model needs ", shape_text(it->second->hf_shape));
    }
  }
  for (const auto& [tensor, file] : w.index) {
    bool skip = false;
    for (const std::string& s : ignored) skip |= ends_with(tensor, s);
    TZ_CHECK(skip || where_.count(tensor), "the index of ", path, " puts '", tensor.substr(0, 128), "' in ",
             w.files[file], ", which does not hold it");
  }
  std::uint64_t total = 0;
  for (const auto& [hf, spec] : by_hf) {
    TZ_CHECK(where_.count(hf), "tensor '", hf, "' is missing from ", path, ": does config.json describe these weights?");
    const SafetensorsTensor& t = *where_.at(hf).tensor;
    total += t.count() * safetensors_dtype_size(t.dtype);
  }
  progress_ = std::make_unique<Progress>("loading " + path, total);
}

HfWeightReader::~HfWeightReader() = default;

void HfWeightReader::read(const std::string& name, float* values) const {
  const Where& w = where_.at(name);
  const SafetensorsReader& r = *files_[w.file];
  r.read_f32(*w.tensor, values, seen_);
  progress_->advance(w.tensor->count() * safetensors_dtype_size(w.tensor->dtype));
  for (std::size_t i = 0, n = w.tensor->count(); i < n; ++i)
    TZ_CHECK(std::isfinite(values[i]), "tensor '", name, "' in ", r.path(), " holds ", values[i], " at element ", i,
             ": a model with NaN or Inf weights cannot be trained from");
}

void HfWeightReader::read_group(int g, std::vector<float>& values) {
  const GroupSpec& group = layout_.groups.at(std::size_t(g));
  values.assign(group.count, 0.0f);
  for (const TensorSpec& t : group.tensors) read(t.hf_name, values.data() + t.offset);
  // A tied tensor the file holds anyway (lm_head.weight of a tied model) must be the one it is tied to.
  for (const HfTie& tie : ties_) {
    const TensorSpec* spec = nullptr;
    for (const TensorSpec& t : group.tensors) spec = t.hf_name == tie.tied_to ? &t : spec;
    if (!spec || !where_.count(tie.name)) continue;
    std::vector<float> own(where_.at(tie.name).tensor->count());
    read(tie.name, own.data());
    for (std::size_t i = 0; i < own.size(); ++i)
      TZ_CHECK(own[i] == values[spec->offset + i], "'", tie.name, "' in ", path_, " differs from '", tie.tied_to,
               "' at element ", i, " but config.json ties them (tie_word_embeddings)");
  }
}

void load_hf_tensors(const std::string& path, const ParamLayout& layout, std::vector<std::vector<float>>& groups,
                     const SeenBytes& seen, const std::vector<std::string>& ignored, const std::vector<HfTie>& ties) {
  HfWeightReader r(path, layout, seen, ignored, ties);
  groups.resize(layout.groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) r.read_group(int(g), groups[g]);
}

}  // namespace tz
