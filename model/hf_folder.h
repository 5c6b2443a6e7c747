// Hugging Face model folders as save_pretrained writes them: config.json, and the weights in
// model.safetensors or in the shards model.safetensors.index.json names. The architecture in config.json
// picks the family (ModelFamily::hf_architectures); the family turns the config into a ModelConfig and
// the tensors are read by their Hugging Face names (TensorSpec::hf_name).
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/progress.h"
#include "model/model_config.h"
#include "model/param_layout.h"
#include "model/safetensors_format.h"
#include "model/safetensors_reader.h"
#include "model/weight_source.h"

namespace tz {

// A folder (or a link to one): what --init-from reads as a Hugging Face model folder.
bool is_hf_folder(const std::string& path);

// config.json's model: its "architectures"[0] finds the family, which reads the rest. Refuses a missing
// or malformed config.json, an architecture no family reads (naming the ones that are), and fields that
// change the math but are not built (naming them).
ModelConfig read_hf_config(const std::string& dir);
// config.json itself: a JSON object naming its architecture (what read_hf_config reads, and what a folder
// written from this one copies).
nlohmann::json read_hf_config_json(const std::string& dir);

// The weight files of a folder and which of them holds each tensor: model.safetensors alone, or the index's
// weight_map. Refuses an index naming a file outside the folder or one that is missing, and a folder
// with neither.
struct HfWeightFiles {
  std::vector<std::string> files;                 // paths, in the order first named
  std::map<std::string, std::size_t> index;       // tensor -> files[i] (empty without an index)
};
HfWeightFiles hf_weight_files(const std::string& dir);

// Fills groups[g] (resized to the layout's counts, padding zero) with every tensor of `layout`, found by
// hf_name in a folder's weight files or in one safetensors file, as fp32 from F32, F16 or BF16. `ignored`
// names tensors a file may hold that are not parameters (suffixes, e.g. ".rotary_emb.inv_freq"); a tensor
// `tied_to` names (e.g. "lm_head.weight" of a tied model) may be present and must then equal that one.
// Refuses, naming the file and the tensor: a missing, extra, misshapen or duplicated tensor, one the
// index puts in another file, another dtype, and NaN or Inf values. `seen` gets every byte read, in the
// order read (every file's header, then the tensors group by group).
struct HfTie {
  std::string name, tied_to;
};

// The same, a group at a time (ModelFamily::open_weights): the constructor opens every file, passes every
// header to `seen` and makes every check that needs no values; read_group reads one group's tensors (and a
// tie's tensor with the group it is tied into), checking their values.
class HfWeightReader final : public WeightSource {
 public:
  HfWeightReader(const std::string& path, const ParamLayout& layout, const SeenBytes& seen,
                 const std::vector<std::string>& ignored = {}, const std::vector<HfTie>& ties = {});
  ~HfWeightReader() override;
  void read_group(int g, std::vector<float>& values) override;

 private:
  struct Where {
    std::size_t file;
    const SafetensorsTensor* tensor;
  };
  void read(const std::string& name, float* values) const;

  std::string path_;
  ParamLayout layout_;
  SeenBytes seen_;
  std::vector<HfTie> ties_;
  std::vector<std::unique_ptr<SafetensorsReader>> files_;
  std::map<std::string, Where> where_;  // every tensor read (the layout's and ties'), by Hugging Face name
  std::unique_ptr<Progress> progress_;  // over the layout's tensors' bytes in the files
};
// Every group at once: an HfWeightReader read through.
void load_hf_tensors(const std::string& path, const ParamLayout& layout, std::vector<std::vector<float>>& groups,
                     const SeenBytes& seen, const std::vector<std::string>& ignored = {},
                     const std::vector<HfTie>& ties = {});

}  // namespace tz
