// Checkpoint trees: the folders training checkpoints live in. A tree belongs to the checkpoint writer
// alone; no other output of any command may land in one, whether or not the command reads or writes it
// (docs/checkpoints.md#who-owns-a-save-dir), and no file in one is taken for a token file.
#pragma once

#include <optional>
#include <string>

namespace tz {

// The names that make a folder a checkpoint tree (train/ writes them).
inline constexpr const char* kCheckpointPointer = "latest";    // names the newest step folder
inline constexpr const char* kSaveDirLock = ".tierzero.lock";  // the save-dir's lease
inline constexpr const char* kCheckpointManifest = "manifest.json";
inline constexpr const char* kFirstRankFile = "rank-00000.bin";

// A checkpoint folder's name, "step-" and the step in 8 digits, and whether a name is one.
std::string checkpoint_name(int step);
bool is_checkpoint_name(const std::string& name);

// What makes `dir` a checkpoint tree, or "" when nothing does: a `latest` pointer (a regular file holding
// a step-NNNNNNNN name), the save-dir lock `.tierzero.lock`, a step-NNNNNNNN or .tmp-step-NNNNNNNN
// folder, or manifest.json beside rank-00000.bin (a checkpoint folder on its own).
std::string checkpoint_tree_marker(const std::string& dir);

// Whether `path` is a checkpoint's data file: rank-NNNNN.bin beside a manifest.json.
bool is_checkpoint_data_file(const std::string& path);

struct CheckpointTree {
  std::string root;    // the outermost folder that is a tree, absolute
  std::string marker;  // what makes it one (checkpoint_tree_marker)
};

// The checkpoint tree `path` lies inside (or, for a folder, is), found by walking up from it: the path as
// given (made absolute) and with its symlinks resolved, so a link into a tree or out of one does not hide
// it. The outermost tree when trees nest; nothing when no folder on the way is one.
std::optional<CheckpointTree> checkpoint_tree_of(const std::string& path);

// Throws when `path`, an output `what` (a flag such as "--metrics"), lies in a checkpoint tree: the
// message names the tree, what marks it, and where to write instead.
void check_outside_checkpoint_trees(const std::string& path, const std::string& what);

}  // namespace tz
