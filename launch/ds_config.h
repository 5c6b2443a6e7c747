// Reads a DeepSpeed JSON config (--config) into TrainOptions, with DeepSpeed's key names and meanings;
// unknown, unimplemented, mistyped and out-of-range keys are errors that name the key, never skipped.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "launch/ds_reader.h"
#include "train/train_options.h"

namespace tz {

// Reads a DeepSpeed JSON config into opt; a key whose flag was given on the command line is left as
// the flag set it (the file's value is still checked). Keys the file does not give keep opt's values.
// Throws tz::Error, naming the file and the full key path, for: a missing or unreadable file, invalid
// JSON (with line and column) or a key repeated in one object, an unknown key (with the nearest known
// one), a DeepSpeed key not implemented in this version, "auto" where neither Hugging Face nor DeepSpeed
// resolves it, a wrong type, or a value out of range.
// Appends to opt.config_lines one line per "auto" resolved and per key accepted with no effect (rank 0
// prints them). "auto" sizes derived from the model's width read opt.model: resolve the model first.
// train_batch_size is stored as given; a micro batch or accumulation count that neither the file nor a
// flag gives is left 0, for derive_batch to derive from it once the world size is known, as DeepSpeed does.
// The largest config file read: DeepSpeed configs are a few KiB.
inline constexpr std::uint64_t kMaxConfigBytes = std::uint64_t(1) << 20;

void load_ds_config(const std::string& path, TrainOptions& opt, const FlagGiven& flag_given);

// DeepSpeed's rule for the batch sizes at `world` ranks, given train_batch_size (opt.train_batch_size > 0):
// an accumulation count left 0 is train_batch_size / (micro batch x world); a micro batch left 0 is
// train_batch_size / (accumulation x world) (with neither given, the accumulation is 1). The division must
// be exact and the product equal train_batch_size; otherwise throws naming `source` and the three values.
void derive_batch(TrainOptions& opt, int world, const std::string& source);

// The same from a parsed document (for tests); `source` names it in messages.
void apply_ds_config(const nlohmann::json& doc, const std::string& source, TrainOptions& opt,
                     const FlagGiven& flag_given);

}  // namespace tz
