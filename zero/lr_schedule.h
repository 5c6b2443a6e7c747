// Learning-rate schedule: linear warm-up, then constant or cosine decay to min_lr; or one of DeepSpeed's
// WarmupLR, WarmupDecayLR and WarmupCosineLR, stepped as DeepSpeed's engine steps them.
#pragma once

#include <string>

namespace tz {

// constant, cosine: tierzero's own (llm.c's). warmup, warmup_decay, warmup_cosine: DeepSpeed's WarmupLR,
// WarmupDecayLR and WarmupCosineLR (deepspeed/runtime/lr_schedules.py), formula for formula.
enum class LrSchedule { constant, cosine, warmup, warmup_decay, warmup_cosine };

// DeepSpeed's warmup_type: how the warm-up rises from its start to its peak.
enum class WarmupType { log, linear };

LrSchedule parse_lr_schedule(const std::string& s);  // the --lr-schedule names
std::string lr_schedule_name(LrSchedule s);
bool is_deepspeed_schedule(LrSchedule s);
WarmupType parse_warmup_type(const std::string& s);  // "log" or "linear"
std::string warmup_type_name(WarmupType t);

struct LrConfig {
  float lr = 3e-4f;  // the peak; WarmupLR, WarmupDecayLR: warmup_max_lr; WarmupCosineLR: the optimizer's lr
  float min_lr = 0.0f;  // cosine: the lr at the last step; WarmupLR, WarmupDecayLR: warmup_min_lr
  int warmup =
      0;  // constant, cosine: steps of linear warm-up from lr/warmup to lr; DeepSpeed's: warmup_num_steps
  int total_steps = 1;  // cosine reaches min_lr at this step (the trainer sets it to --steps)
  LrSchedule schedule = LrSchedule::constant;
  // DeepSpeed's schedules only (their defaults are DeepSpeed's):
  WarmupType warmup_type = WarmupType::log;
  int total_num_steps = 0;        // WarmupDecayLR, WarmupCosineLR: total_num_steps; 0 takes total_steps
  float warmup_min_ratio = 0.0f;  // WarmupCosineLR: the warm-up starts at this fraction of lr
  float cos_min_ratio = 1e-4f;    // WarmupCosineLR: the cosine ends at this fraction of lr
};

// Learning rate at 1-based optimizer step `step` (the steps applied so far, this one included).
// DeepSpeed's schedules: DeepSpeed builds the scheduler with last_batch_iteration = -1, which sets the lr of
// the first optimizer step, and calls scheduler.step() after every applied optimizer step; so step s runs
// with last_batch_iteration = s - 2 (step 1 with -1: warmup_min_lr for WarmupLR and WarmupDecayLR, 0 for
// WarmupCosineLR).
float learning_rate(const LrConfig& c, int step);

// Refuses a DeepSpeed schedule DeepSpeed itself could not run for `steps` steps: WarmupCosineLR divides by
// total_num_steps - max(2, warmup_num_steps), zero when they are equal, at its first step after warm-up.
// `what` names where the settings came from, for the message.
void check_lr_config(const LrConfig& c, int steps, const std::string& what);

// The schedule and its DeepSpeed settings, as the ranks compare them: "constant" and "cosine" alone, a
// DeepSpeed schedule with its warmup_type, total_num_steps and (WarmupCosineLR) ratios.
std::string describe_lr_schedule(const LrConfig& c);

}  // namespace tz
