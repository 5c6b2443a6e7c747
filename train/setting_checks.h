// Settings that name things of the machine a rank runs on: the NUMA node of every numa:N tier (by
// --offload-optimizer, --offload-param, --offload-activations or a DeepSpeed config's device) and of every
// --numa-mem budget, and every --nvme-path, must exist there, whether or not the plan puts bytes on them.
// `train` refuses a run that names one this machine lacks, before anything is allocated; `plan`, which may
// plan for another machine, says so beside the plan.
#pragma once

#include <string>
#include <vector>

#include "train/train_options.h"

namespace tz {

// One line per thing this machine lacks, naming the flag and what the machine has; empty when all exist.
std::vector<std::string> missing_on_this_machine(const TrainOptions& opt);

}  // namespace tz
