// Before step 1: every file the run will write (--save-safetensors, --metrics) can be written, is not
// something other than a file, and is not one of its inputs (--data, --val-data, --init-from, --config),
// so a run never ends by losing its model to a bad path or truncating its own data.
#pragma once

#include "train/train_options.h"

namespace tz {

// Throws naming the flag, the path and what to do.
void check_outputs(const TrainOptions& opt);

}  // namespace tz
