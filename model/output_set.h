// Every output of one command, checked together before the command does any work: each target as its
// writer will check it (model/protected_inputs.h: not an input, not in a checkpoint tree, not a folder,
// device, FIFO or mount point), no two outputs the same or one inside another's folder, and each
// writable where its writer will create it. So no refusal comes after the work has been paid for.
#pragma once

#include <string>
#include <vector>

#include "model/protected_inputs.h"

namespace tz {

enum class PlannedKind {
  file,          // replaced by rename: a temporary file is made beside it
  folder,        // a new or empty folder, written beside it and renamed into place (a model folder)
  checkpoints,   // a save-dir: files are written inside it, and it may already be a checkpoint tree
};

struct PlannedOutput {
  std::string flag;  // "--metrics"
  std::string path;
  PlannedKind kind = PlannedKind::file;
};

// Throws naming the flag, the path and what to do for the first output that fails. Outputs with an
// empty path are skipped.
void check_planned_outputs(const std::vector<PlannedOutput>& outputs);

}  // namespace tz
