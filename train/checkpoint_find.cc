// Choosing a checkpoint in a folder of checkpoints: the `latest` pointer, intact folders, and refusals
// that name the damage and the checkpoint to resume instead. Nothing here deletes or writes anything.
#include "train/checkpoint_find.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "core/error.h"
#include "model/file_io.h"
#include "train/checkpoint.h"
#include "train/checkpoint_manifest.h"

namespace tz {
namespace {

namespace fs = std::filesystem;

// The step-NNNNNNNN entries of `folder` (of any type: a step-named file is a damaged checkpoint too),
// newest first.
std::vector<std::string> step_entries(const std::string& folder) {
  std::vector<std::string> steps;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec))
    if (is_checkpoint_name(e.path().filename().string())) steps.push_back(e.path().filename().string());
  std::sort(steps.rbegin(), steps.rend());  // zero-padded: text order is step order
  return steps;
}

void check_intact(const std::string& dir) {
  std::error_code ec;
  TZ_CHECK(fs::is_directory(dir, ec), "'", dir, "' is not a folder");
  const CheckpointManifest m = read_manifest(dir);
  for (const CheckpointFile& f : m.files) {
    const InputFile file(dir + "/" + f.name, "checkpoint data file");
    TZ_CHECK(file.size() == f.bytes, "checkpoint data file '", file.path(), "' is ", file.size(),
             " bytes but the manifest says ", f.bytes, " (truncated?)");
  }
}

}  // namespace

std::string checkpoint_damage(const std::string& dir) {
  try {
    check_intact(dir);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::string newest_intact_checkpoint(const std::string& folder, const std::string& except) {
  for (const auto& s : step_entries(folder)) {
    const std::string dir = folder + "/" + s;
    if (dir != except && checkpoint_damage(dir).empty()) return dir;
  }
  return "";
}

void refuse_damaged_checkpoint(const std::string& what, const std::string& reason, const std::string& folder,
                               const std::string& except) {
  const std::string other = folder.empty() ? "" : newest_intact_checkpoint(folder, except);
  TZ_FAIL(what, " is damaged, and nothing was deleted; ",
          other.empty() ? "no other checkpoint in " + (folder.empty() ? std::string("its folder") : folder) +
                              " is intact"
                        : "the newest intact checkpoint is " + other + ": resume it with --resume " + other,
          ". What is wrong: ", reason);
}

void refuse_damaged_checkpoint(const std::string& dir, const std::string& reason) {
  const fs::path p(dir);
  const bool step = is_checkpoint_name(p.filename().string());
  refuse_damaged_checkpoint("checkpoint " + dir, reason, step ? p.parent_path().string() : "", dir);
}

std::string latest_checkpoint(const std::string& save_dir, std::string* note) {
  std::error_code ec;
  if (!fs::is_directory(save_dir, ec)) return "";
  const std::string pointer = save_dir + "/latest";
  if (fs::exists(fs::symlink_status(pointer, ec))) {
    // The pointer is one folder name tierzero wrote atomically: anything else (too long, not a regular
    // file, not a step-NNNNNNNN name) is damage, and guessing past it could train from an older step.
    std::string name;
    try {
      name = read_small_file(pointer, "checkpoint pointer", kMaxPointerBytes, "it holds one folder name");
      while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
      TZ_CHECK(is_checkpoint_name(name), "the pointer names '", name.substr(0, 64),
               "', which is not a step-NNNNNNNN folder name");
    } catch (const std::exception& e) {
      refuse_damaged_checkpoint("the checkpoint pointer " + pointer, e.what(), save_dir, "");
    }
    const std::string dir = save_dir + "/" + name;
    if (fs::exists(fs::symlink_status(dir, ec))) {
      const std::string damage = checkpoint_damage(dir);
      if (!damage.empty())
        refuse_damaged_checkpoint("checkpoint " + dir + " (the one " + pointer + " names)", damage, save_dir,
                                  dir);
      return dir;
    }
    // A pointer to a folder that is not there (removed by hand, or a copy without it): the newest
    // checkpoint present is as far as the run got in this folder.
    if (note)
      *note = "the pointer " + pointer + " names '" + name +
              "', which does not exist; using the newest checkpoint";
  }
  const std::vector<std::string> steps = step_entries(save_dir);
  if (steps.empty()) return "";
  const std::string newest = save_dir + "/" + steps.front();
  const std::string damage = checkpoint_damage(newest);
  if (!damage.empty())
    refuse_damaged_checkpoint("checkpoint " + newest + " (the newest in " + save_dir + ")", damage, save_dir,
                              newest);
  return newest;
}

}  // namespace tz
