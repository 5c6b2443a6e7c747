// Training checkpoints: `tierzero train --save-dir DIR --save-every K --keep-last N --resume latest`.
// DIR holds step-NNNNNNNN folders (manifest.json + one data file per writing rank) and a `latest`
// pointer. A save is collective: every rank writes its file into DIR/.tmp-step-NNNNNNNN, rank 0 writes
// the manifest, the folder is renamed into place and fsynced, and `latest` moves last, so a crash at
// any moment leaves the previous checkpoint loadable; pruning happens only after that. A load reads,
// on any world size, stage or offload setting, the byte ranges each rank's new shards need.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "comm/communicator.h"
#include "train/checkpoint_io.h"
#include "train/train_options.h"
#include "zero/engine.h"

namespace tz {

struct CheckpointProgress {
  int step = 0;
  std::uint64_t data_epoch = 0, data_batch = 0;  // the training loader's next batch
  std::string run_id;                            // the run's id (train/save_dir.h), written into the manifest
};

using PhaseHook = std::function<void(const std::string& phase)>;

// Collective. Writes the checkpoint of `engine` after step p.step; returns its folder.
std::string save_checkpoint(const TrainOptions& opt, Engine& engine, Communicator& comm, const CheckpointProgress& p,
                            const PhaseHook& phase = nullptr);

// The checkpoint to continue from in save_dir (checkpoint_find.h says what intact means): the folder
// the `latest` pointer names, else (no pointer, or one naming a folder that does not exist) the highest
// step-NNNNNNNN folder; "" when there is none. Throws, naming the newest intact checkpoint to resume
// instead, when that folder is damaged or the pointer itself is (over kMaxPointerBytes, not a regular
// file, not a folder name): it never falls back to an older checkpoint. `note` explains a fallback from
// a pointer to a missing folder.
std::string latest_checkpoint(const std::string& save_dir, std::string* note = nullptr);

// The checkpoint --resume names, decided by rank 0 and the same on every rank ("" with `latest` and no
// checkpoint yet). Throws for a --resume that names no checkpoint.
std::string resume_checkpoint(const TrainOptions& opt, Communicator& comm, const std::function<void(const std::string&)>& log);

// Opens a checkpoint to resume `opt` from: the model must match; every file's checksum is verified
// (each rank verifies some of the files); differences that are allowed (precision, world size, stage,
// offload, batch shape) are logged on rank 0. Collective.
std::unique_ptr<CheckpointReader> open_resume(const std::string& dir, const TrainOptions& opt, Communicator& comm,
                                              const std::function<void(const std::string&)>& log);

// After the engine was built with the checkpoint's master values: Adam m and v into every group's
// optimizer range, and the step counters (and the fp16 scaler when it was trained in fp16).
void restore_engine(const CheckpointReader& ckpt, const TrainOptions& opt, Engine& engine);

// The elements of the groups' optimizer ranges this rank holds (what a resume restores m and v into);
// with `shard_of` a rank, only those in that rank's shards (what its checkpoint file holds of each array).
// For the progress lines of a save and a resume.
std::uint64_t owned_state_elements(const MemoryPlan& plan, int shard_of = -1);

// The training loader's position to resume at, mapped to this run's global batch when it differs.
CheckpointProgress resume_position(const CheckpointManifest& m, std::uint64_t global_batch_tokens);

}  // namespace tz
