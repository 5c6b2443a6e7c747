// Before step 1: every file the run will write (--save-safetensors, --metrics, --prometheus-textfile,
// --save-hf, the checkpoints in --save-dir) can be written, is not something other than a file, is not,
// or inside, one of its inputs (--data, --val-data, --init-from, --config, the checkpoint being resumed
// and its `latest`) or any checkpoint tree, and no two collide (the final checkpoint folder included: it
// lies in --save-dir), so a run never ends by losing its model to a bad path or by destroying what it
// read. The writer checks again before each rename (model/file_io.h); this check makes the refusal come
// before any work.
#pragma once

#include <vector>

#include "model/protected_inputs.h"
#include "train/train_options.h"

namespace tz {

// The run's input files, protected for as long as the result lives (the checkpoint being resumed is
// protected by the trainer once it is chosen).
std::vector<ProtectedInput> protect_inputs(const TrainOptions& opt);

// Throws naming the flag, the path and what to do.
void check_outputs(const TrainOptions& opt);

}  // namespace tz
