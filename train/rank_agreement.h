// At start-up every rank states the settings that must be the same on all ranks (model shape, stage,
// batch sizes, accumulation, dtype, seed, schedule, optimizer, offload placement, the training data's
// identity, the checkpoint options and which outputs are given) and the ranks compare them, so that a job
// started with different settings on different ranks stops at once naming the setting and both values,
// instead of corrupting memory or hanging in mismatched collectives. Budgets, NVMe paths and output paths
// may differ per rank. What is known only later (the contents of --init-from) is compared when it is.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "train/data_identity.h"
#include "train/train_options.h"

namespace tz {

// (flag, value) for every setting the ranks must share, values formatted exactly (floats to 9 digits).
std::vector<std::pair<std::string, std::string>> shared_settings(const TrainOptions& opt);

// Collective: every rank calls it with its (setting, value) list. Throws on every rank, naming the first
// setting that differs, the lowest rank that differs from rank 0 and both values (values of 64 bytes or
// more are compared by their start and a hash of the whole); lists of different lengths are refused
// before their contents are exchanged.
void check_settings_agree(const std::vector<std::pair<std::string, std::string>>& settings, Communicator& comm);

// check_settings_agree(shared_settings(opt), comm).
void check_ranks_agree(const TrainOptions& opt, Communicator& comm);

}  // namespace tz
