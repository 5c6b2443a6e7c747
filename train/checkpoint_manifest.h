// A training checkpoint's manifest (manifest.json): the model, every group's global size and tensors,
// the training progress (steps, loss scaler, data position, seed), the shard map that wrote it, and
// per file the sections it holds with the file's checksum. Sections are in global element indices, so
// any world size, stage or offload setting can find the byte ranges it needs (no conversion step).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/checkpoint_tree.h"  // checkpoint_name, is_checkpoint_name
#include "model/model_config.h"
#include "zero/engine.h"

namespace tz {

inline constexpr const char* kCheckpointFormat = "tierzero-checkpoint";
inline constexpr int kCheckpointVersion = 1;
inline constexpr std::uint64_t kMaxManifestBytes = std::uint64_t(64) << 20;
// The `latest` pointer holds one folder name; anything longer is not one tierzero wrote.
inline constexpr std::uint64_t kMaxPointerBytes = 4096;

// Elements [begin, begin + count) of one group, stored as three fp32 arrays one after another from
// byte `offset` of the file: the master, Adam m, Adam v.
struct CheckpointSection {
  int group = 0;
  std::uint64_t begin = 0, count = 0, offset = 0;
};

struct CheckpointFile {
  std::string name;  // relative to the checkpoint folder, e.g. "rank-00003.bin"
  std::uint64_t bytes = 0;
  std::uint64_t xxh3 = 0;  // XXH3-64 of the whole file
  std::vector<CheckpointSection> sections;
};

// Where a tensor's elements lie in its group as the checkpoint stores them.
struct StoredTensor {
  std::uint64_t offset = 0, count = 0;
};

struct CheckpointGroup {
  std::string name;
  std::uint64_t count = 0;  // elements (the layout's, alignment padding included; no shard padding)
  // For readers: each tensor's Hugging Face name, shape as stored (wte with padded rows) and offset in the
  // group. Written from the model's layout.
  nlohmann::json tensors = nlohmann::json::array();
  // Read back from `tensors`: each tensor's offset and count, in the layout's order (empty where a manifest
  // lists none). A checkpoint written under another alignment of the layout (before kBlockAlign) is read
  // through them, tensor by tensor (CheckpointReader).
  std::vector<StoredTensor> stored;
};

struct CheckpointManifest {
  int step = 0;  // training steps done (the next run starts at step + 1)
  // The run that wrote it (train/save_dir.h): drawn by a fresh run, inherited by its resumes; pruning
  // removes only this run's step folders. "" in checkpoints written before run ids.
  std::string run_id;
  EngineState engine;
  // Data position: the next global batch (epoch, index) of the training loader, in global batches of
  // global_batch_tokens tokens (world x micro-batch x sequence length).
  std::uint64_t data_epoch = 0, data_batch = 0, global_batch_tokens = 0;
  std::string data_identity;
  std::uint64_t seed = 0;
  bool shuffle = false;
  ModelConfig model;  // its family is "gpt2" in manifests written before families
  std::string dtype;  // the working precision it was trained in
  int world = 1, stage = 0;
  std::string offload_optimizer, offload_param;
  // The formats the run held its optimizer states in (--optimizer-states, --master-weights; "fp32" in
  // checkpoints written before them). The files hold their values as fp32 whatever the format.
  std::string optimizer_states = "fp32", master_weights = "fp32";
  nlohmann::json schedule;  // the learning-rate settings, for the record
  std::vector<CheckpointGroup> groups;
  std::vector<CheckpointFile> files;
};

nlohmann::json manifest_to_json(const CheckpointManifest& m);
// Validates the manifest as a whole before anything in it is trusted: every field's type and range,
// the layout of files and sections (validate_manifest_layout: names, sizes, no overlap, every group
// covered exactly once) and the groups against the model's layout; throws naming `source`, the field and
// what is wrong.
CheckpointManifest manifest_from_json(const nlohmann::json& j, const std::string& source);
// Reads <dir>/manifest.json (a regular file, at most kMaxManifestBytes).
CheckpointManifest read_manifest(const std::string& dir);

std::string hex64(std::uint64_t v);

}  // namespace tz
