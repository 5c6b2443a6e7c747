// Hugging Face model folders out, as save_pretrained writes them: config.json (torch_dtype set to the
// written dtype), the weights in model.safetensors or, past the shard size, in
// model-0000K-of-0000N.safetensors with model.safetensors.index.json ({"metadata": {"total_size"},
// "weight_map"}), `__metadata__ {"format": "pt"}` in every file, tensors by Hugging Face's names
// (TensorSpec::hf_name, hf_shape), and the tokenizer and generation files of a source folder copied.
// The values arrive one parameter group at a time, in layout order (a ZeRO gather, a checkpoint's
// file): the writer holds none of them. The folder appears whole or not at all: everything is written
// into a hidden sibling folder renamed into place on commit.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/progress.h"
#include "model/param_layout.h"
#include "model/safetensors_stream.h"

namespace tz {

inline constexpr std::uint64_t kHfShardBytes = 5'000'000'000;  // transformers' max_shard_size, "5GB"

// The files copied from a source model folder when present: the tokenizer's, the chat template and the
// generation settings (what from_pretrained and pipelines read beside the weights).
const std::vector<std::string>& hf_side_files();

struct HfFolderOptions {
  DType dtype = DType::f32;              // f32, bf16 or f16
  std::uint64_t shard_bytes = kHfShardBytes;
  nlohmann::json config;                 // config.json's object; torch_dtype is set here
  std::string copy_from;                 // a model folder whose hf_side_files() are copied ("": none)
  std::string flag = "--save-hf";        // names the output in errors
};

// Which file each tensor goes to: tensors in layout order, a new shard started when the next tensor
// would take the current one past shard_bytes (a tensor larger than that alone in its own), as
// transformers splits a state dict. files[k] names shard k; shard_of[i] is the i-th tensor's shard.
struct HfShardPlan {
  std::vector<std::string> files;
  std::vector<std::size_t> shard_of;
  std::uint64_t total_bytes = 0;
};
HfShardPlan plan_hf_shards(const ParamLayout& layout, DType dtype, std::uint64_t shard_bytes);

// Refuses `dir` unless it is absent or an empty folder, and not a protected input or inside one.
void check_hf_output_folder(const std::string& dir, const std::string& flag);

class HfFolderWriter {
 public:
  // Checks `dir` (check_hf_output_folder), the options and the source folder's files, then creates the
  // hidden temporary folder beside `dir` (and `dir`'s missing parents).
  HfFolderWriter(std::string dir, ParamLayout layout, HfFolderOptions opt);
  ~HfFolderWriter();  // without commit: the temporary folder is removed, `dir` untouched
  HfFolderWriter(const HfFolderWriter&) = delete;
  HfFolderWriter& operator=(const HfFolderWriter&) = delete;

  // Group g's fp32 values (layout.groups[g].count of them); groups 0, 1, ... in order. Refuses non-finite
  // values naming the group.
  void put_group(int g, const float* values);
  // Or one tensor at a time: the next tensor of the layout, its hf_shape's count of fp32 values.
  void put_tensor(const float* values);
  // After the last group: the index, config.json and the copied files, then the rename into place.
  void commit();

  const HfShardPlan& plan() const { return plan_; }

 private:
  void open_shard(std::size_t k);

  std::string dir_, tmp_;
  ParamLayout layout_;
  HfFolderOptions opt_;
  HfShardPlan plan_;
  std::vector<std::pair<int, std::size_t>> order_;  // every (group, tensor), in layout order
  std::size_t next_tensor_ = 0;                     // into order_
  std::size_t shard_ = 0;
  std::unique_ptr<SafetensorsStream> out_;
  bool committed_ = false;
  std::unique_ptr<Progress> progress_;  // over the shards' bytes
};

}  // namespace tz
