// Reads a DeepSpeed config's `scheduler` section (WarmupLR, WarmupDecayLR, WarmupCosineLR) into
// TrainOptions' LrConfig, with DeepSpeed's defaults and "auto" resolved as the Hugging Face Trainer does.
#pragma once

#include <nlohmann/json.hpp>

#include "launch/ds_reader.h"
#include "train/train_options.h"

namespace tz {

// `scheduler` is the section's value. Reads it after the optimizer section: WarmupCosineLR scales the
// optimizer's lr, and "auto" warmup_max_lr takes it. `optimizer_lr` is optimizer.params.lr when the file
// gives it as a number (else null): WarmupLR and WarmupDecayLR override it, which gets a printed line.
// With --lr-schedule given, the section is checked but not applied. The schedule's flags (--lr, --min-lr,
// --warmup) override its parameters one by one.
void read_scheduler(DsReader& r, const nlohmann::json& scheduler, TrainOptions& opt,
                    const nlohmann::json* optimizer_lr);

}  // namespace tz
