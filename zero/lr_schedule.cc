// Warm-up + constant/cosine learning rate, as llm.c and nanoGPT compute it; and DeepSpeed's WarmupLR,
// WarmupDecayLR and WarmupCosineLR, as deepspeed/runtime/lr_schedules.py computes them (in double, in the
// same order of operations, rounded to float at the end).
#include "zero/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace tz {
namespace {

constexpr double kPi = 3.141592653589793;  // Python's math.pi

// DeepSpeed raises warmup_num_steps to at least 2 (it divides by log(warmup_num_steps)).
int ds_warmup_steps(const LrConfig& c) { return std::max(2, c.warmup); }

// A float as the ranks compare it: enough digits to tell any two floats apart.
std::string exact(float x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", double(x));
  return buf;
}

int ds_total_steps(const LrConfig& c) { return c.total_num_steps > 0 ? c.total_num_steps : c.total_steps; }

// The warm-up's progress at last_batch_iteration it < warmup_num_steps: WarmupLR._get_gamma's first branch
// (and WarmupCosineLR.get_lr_ratio's), 0 at it = 0.
double ds_warmup_gamma(const LrConfig& c, int it) {
  const int w = ds_warmup_steps(c);
  if (c.warmup_type == WarmupType::log) {
    const double inverse_log_warm_up = 1.0 / std::log(double(w));
    return inverse_log_warm_up * std::log(double(it + 1));
  }
  return double(it) / double(w);
}

// WarmupLR and WarmupDecayLR: min_lr + (max_lr - min_lr) * gamma.
float ds_warmup_lr(const LrConfig& c, int it) {
  const double min_lr = c.min_lr, delta_lr = double(c.lr) - double(c.min_lr);
  if (it < 0) return c.min_lr;  // the constructor's lr: get_lr() returns min_lrs before the first step()
  const int w = ds_warmup_steps(c);
  double gamma = 1.0;
  if (it < w) {
    gamma = ds_warmup_gamma(c, it);
  } else if (c.schedule == LrSchedule::warmup_decay) {
    const int total = ds_total_steps(c);
    gamma = std::max(0.0, double(total - it) / std::max(1.0, double(total - w)));
  }
  return float(min_lr + (delta_lr * gamma));
}

// WarmupCosineLR: the optimizer's lr times a ratio.
float ds_warmup_cosine_lr(const LrConfig& c, int it) {
  if (it < 0) return 0.0f;  // get_lr() returns [0.0] before the first step()
  const int w = ds_warmup_steps(c);
  double ratio;
  if (it < w) {
    const double ratio_delta = 1.0 - double(c.warmup_min_ratio);
    ratio = double(c.warmup_min_ratio) + ds_warmup_gamma(c, it) * ratio_delta;
  } else {
    const double real_last_step = double(it - w + 1);
    // DeepSpeed divides by zero here when total_num_steps == warmup_num_steps; check_lr_config refuses
    // such a run before it starts, so this guard only keeps the function total.
    const double real_total_steps = double(ds_total_steps(c) - w == 0 ? 1 : ds_total_steps(c) - w);
    const double ratio_delta = 1.0 - double(c.cos_min_ratio);
    ratio = (1 + std::cos(kPi * real_last_step / real_total_steps)) / 2;
    ratio = std::max(0.0, double(c.cos_min_ratio) + ratio_delta * ratio);
  }
  return float(double(c.lr) * ratio);
}

}  // namespace

LrSchedule parse_lr_schedule(const std::string& s) {
  if (s == "constant") return LrSchedule::constant;
  if (s == "cosine") return LrSchedule::cosine;
  if (s == "warmup") return LrSchedule::warmup;
  if (s == "warmup-decay") return LrSchedule::warmup_decay;
  if (s == "warmup-cosine") return LrSchedule::warmup_cosine;
  TZ_FAIL("unknown --lr-schedule '", s,
          "': use constant, cosine, or DeepSpeed's warmup (WarmupLR), warmup-decay (WarmupDecayLR) or "
          "warmup-cosine (WarmupCosineLR)");
}

std::string lr_schedule_name(LrSchedule s) {
  switch (s) {
    case LrSchedule::constant:
      return "constant";
    case LrSchedule::cosine:
      return "cosine";
    case LrSchedule::warmup:
      return "warmup";
    case LrSchedule::warmup_decay:
      return "warmup-decay";
    case LrSchedule::warmup_cosine:
      return "warmup-cosine";
  }
  return "?";
}

bool is_deepspeed_schedule(LrSchedule s) { return s != LrSchedule::constant && s != LrSchedule::cosine; }

WarmupType parse_warmup_type(const std::string& s) {
  if (s == "log") return WarmupType::log;
  if (s == "linear") return WarmupType::linear;
  TZ_FAIL("unknown warmup_type '", s, "': use log or linear");
}

std::string warmup_type_name(WarmupType t) { return t == WarmupType::log ? "log" : "linear"; }

float learning_rate(const LrConfig& c, int step) {
  if (c.schedule == LrSchedule::warmup || c.schedule == LrSchedule::warmup_decay)
    return ds_warmup_lr(c, step - 2);
  if (c.schedule == LrSchedule::warmup_cosine) return ds_warmup_cosine_lr(c, step - 2);
  if (c.warmup > 0 && step <= c.warmup) return c.lr * float(step) / float(c.warmup);
  if (c.schedule == LrSchedule::constant) return c.lr;
  int span = c.total_steps - c.warmup;
  if (span <= 0) return c.min_lr;
  double progress = double(step - c.warmup) / double(span);
  if (progress > 1.0) progress = 1.0;
  double coeff = 0.5 * (1.0 + std::cos(3.141592653589793 * progress));
  return float(c.min_lr + coeff * (c.lr - c.min_lr));
}

void check_lr_config(const LrConfig& c, int steps, const std::string& what) {
  if (c.schedule != LrSchedule::warmup_cosine && c.schedule != LrSchedule::warmup_decay) return;
  const int w = ds_warmup_steps(c);
  LrConfig run = c;
  run.total_steps = steps;
  // DeepSpeed only warns: past its total, WarmupDecayLR trains at lr 0 and WarmupCosineLR runs its cosine
  // backwards, so a run that goes there is refused.
  const int total = ds_total_steps(run);
  const char* name = c.schedule == LrSchedule::warmup_decay ? "WarmupDecayLR" : "WarmupCosineLR";
  if (total < w && steps > total)
    TZ_FAIL(what, ": ", name, "'s total_num_steps ", total, " is below its warmup_num_steps ", w,
            " (the warm-up outlasts the schedule), so steps ", total + 1, " to ", steps, " of this run would train at ",
            c.schedule == LrSchedule::warmup_decay ? "learning rate 0" : "a cosine run past its end",
            " (DeepSpeed only warns); give a total_num_steps of at least the warm-up (\"auto\" takes --steps), or a "
            "shorter warm-up");
  if (c.schedule != LrSchedule::warmup_cosine) return;
  // The first step past warm-up runs with last_batch_iteration w, that is step w + 2.
  if (ds_total_steps(run) == w && steps >= w + 2)
    TZ_FAIL(what, ": WarmupCosineLR with total_num_steps ", ds_total_steps(run),
            " equal to warmup_num_steps ", "(raised to at least 2) divides by zero at step ", w + 2,
            ", as DeepSpeed's does; give a total_num_steps larger than warmup_num_steps");
}

std::string describe_lr_schedule(const LrConfig& c) {
  std::string s = lr_schedule_name(c.schedule);
  if (!is_deepspeed_schedule(c.schedule)) return s;
  s += " (warmup_type " + warmup_type_name(c.warmup_type);
  if (c.schedule != LrSchedule::warmup) s += ", total_num_steps " + std::to_string(c.total_num_steps);
  if (c.schedule == LrSchedule::warmup_cosine)
    s += ", warmup_min_ratio " + exact(c.warmup_min_ratio) + ", cos_min_ratio " + exact(c.cos_min_ratio);
  return s + ")";
}

}  // namespace tz
