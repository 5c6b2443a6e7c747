// Learning-rate schedule: linear warm-up, constant, and cosine decay to min_lr at the last step; and
// DeepSpeed's WarmupLR, WarmupDecayLR and WarmupCosineLR against DeepSpeed's own code.
#include "zero/lr_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"

namespace tz {
namespace {

TEST(LrSchedule, WarmupRisesLinearlyToThePeak) {
  LrConfig c{1e-3f, 0.0f, 4, 10, LrSchedule::constant};
  EXPECT_FLOAT_EQ(learning_rate(c, 1), 0.25e-3f);
  EXPECT_FLOAT_EQ(learning_rate(c, 2), 0.5e-3f);
  EXPECT_FLOAT_EQ(learning_rate(c, 4), 1e-3f);
  EXPECT_FLOAT_EQ(learning_rate(c, 9), 1e-3f);
}

TEST(LrSchedule, CosineDecaysFromThePeakToMinLrAtTheLastStep) {
  LrConfig c{1e-3f, 1e-4f, 2, 12, LrSchedule::cosine};
  EXPECT_FLOAT_EQ(learning_rate(c, 2), 1e-3f);
  EXPECT_NEAR(learning_rate(c, 7), 1e-4 + 0.5 * (1e-3 - 1e-4), 1e-9);  // halfway: cos(pi/2) = 0
  EXPECT_NEAR(learning_rate(c, 12), 1e-4, 1e-9);
  EXPECT_NEAR(learning_rate(c, 20), 1e-4, 1e-9);  // past the end it stays at min_lr
  for (int s = 3; s <= 12; ++s) EXPECT_LE(learning_rate(c, s), learning_rate(c, s - 1));
}

TEST(LrSchedule, UnknownNameIsAnError) {
  EXPECT_EQ(parse_lr_schedule("cosine"), LrSchedule::cosine);
  EXPECT_EQ(parse_lr_schedule("warmup"), LrSchedule::warmup);
  EXPECT_EQ(parse_lr_schedule("warmup-decay"), LrSchedule::warmup_decay);
  EXPECT_EQ(parse_lr_schedule("warmup-cosine"), LrSchedule::warmup_cosine);
  for (LrSchedule s : {LrSchedule::constant, LrSchedule::cosine, LrSchedule::warmup, LrSchedule::warmup_decay,
                       LrSchedule::warmup_cosine})
    EXPECT_EQ(parse_lr_schedule(lr_schedule_name(s)), s);
  EXPECT_THROW(parse_lr_schedule("linear"), Error);
  EXPECT_THROW(parse_warmup_type("exp"), Error);
}

// The reference values are the lr of each optimizer step as DeepSpeed applies it, from DeepSpeed's own
// deepspeed/runtime/lr_schedules.py (microsoft/DeepSpeed 38327e07, Feb 2025) run by /usr/bin/python3 with
// torch and deepspeed.utils stubbed out, as its engine drives the scheduler: built before the first step,
// step() after each optimizer step.
//
//   import sys, types
//   torch = types.ModuleType("torch"); optim = types.ModuleType("torch.optim")
//   class Optimizer:
//       def __init__(self, lr): self.param_groups = [{"lr": lr}]
//   optim.Optimizer = Optimizer; torch.optim = optim
//   ds = types.ModuleType("deepspeed"); utils = types.ModuleType("deepspeed.utils")
//   utils.logger = types.SimpleNamespace(warning=lambda *a, **k: None, info=lambda *a, **k: None)
//   sys.modules.update({"torch": torch, "torch.optim": optim, "deepspeed": ds, "deepspeed.utils": utils})
//   g = {}; exec(open("lr_schedules.py").read(), g)
//   def run(cls, org_lr, steps, **params):
//       opt = Optimizer(org_lr); sched = g[cls](opt, **params); lrs = []
//       for _ in range(steps):
//           lrs.append(opt.param_groups[0]["lr"]); sched.step()
//       return lrs
//   print(run("WarmupLR", 3e-4, 8, warmup_min_lr=1e-5, warmup_max_lr=1e-3, warmup_num_steps=5))  # etc.
//
// tierzero keeps the settings in float and computes in double, so each value must match to a relative
// 1e-6 (float rounding of the inputs and of the result is below 1.2e-7 each).
void expect_deepspeed_lrs(const LrConfig& c, const std::vector<double>& want, const char* what) {
  for (std::size_t i = 0; i < want.size(); ++i) {
    const int step = int(i) + 1;
    EXPECT_NEAR(learning_rate(c, step), want[i], 1e-6 * want[i] + 1e-12) << what << ", step " << step;
  }
}

LrConfig deepspeed(LrSchedule s, float lr, float min_lr, int warmup, WarmupType type, int total = 0) {
  LrConfig c;
  c.schedule = s;
  c.lr = lr;
  c.min_lr = min_lr;
  c.warmup = warmup;
  c.warmup_type = type;
  c.total_num_steps = total;
  return c;
}

TEST(LrSchedule, WarmupLrIsDeepSpeedsStepForStep) {
  // Steps 1 and 2 both run at warmup_min_lr: the constructor's lr, then log(0 + 1) = 0.
  expect_deepspeed_lrs(deepspeed(LrSchedule::warmup, 1e-3f, 1e-5f, 5, WarmupType::log),
                       {1e-05, 1e-05, 0.00043636979249265915, 0.0006857801325411255, 0.0008627395849853183,
                        0.001, 0.001, 0.001},
                       "WarmupLR log");
  expect_deepspeed_lrs(deepspeed(LrSchedule::warmup, 1e-3f, 0.0f, 4, WarmupType::linear),
                       {0.0, 0.0, 0.00025, 0.0005, 0.00075, 0.001, 0.001, 0.001}, "WarmupLR linear");
}

TEST(LrSchedule, WarmupDecayLrIsDeepSpeedsStepForStepAndStaysAtWarmupMinLrPastTheEnd) {
  expect_deepspeed_lrs(deepspeed(LrSchedule::warmup_decay, 1e-3f, 1e-5f, 4, WarmupType::log, 10),
                       {1e-05, 1e-05, 0.000505, 0.0007945564378569724, 0.001, 0.001, 0.000835, 0.00067,
                        0.000505, 0.00034, 0.000175, 1e-05, 1e-05, 1e-05},
                       "WarmupDecayLR log");
  expect_deepspeed_lrs(deepspeed(LrSchedule::warmup_decay, 1e-3f, 0.0f, 2, WarmupType::linear, 4),
                       {0.0, 0.0, 0.0005, 0.001, 0.0005, 0.0, 0.0}, "WarmupDecayLR linear");
  // total_num_steps 0 takes total_steps (the trainer's --steps), as --lr-schedule warmup-decay does.
  LrConfig c = deepspeed(LrSchedule::warmup_decay, 1e-3f, 0.0f, 2, WarmupType::linear);
  c.total_steps = 4;
  expect_deepspeed_lrs(c, {0.0, 0.0, 0.0005, 0.001, 0.0005, 0.0, 0.0}, "WarmupDecayLR, total from --steps");
}

TEST(LrSchedule, WarmupCosineLrIsDeepSpeedsStepForStepIncludingItsRisePastTheEnd) {
  LrConfig c = deepspeed(LrSchedule::warmup_cosine, 2e-3f, 0.0f, 4, WarmupType::log, 12);
  c.warmup_min_ratio = 0.1f;
  c.cos_min_ratio = 0.05f;
  // Step 1 runs at 0 (get_lr() before the first step() is [0.0]); past total_num_steps DeepSpeed's cosine
  // rises again, and so does this one.
  expect_deepspeed_lrs(
      c,
      {0.0, 0.0002, 0.0011, 0.0016264662506490406, 0.002, 0.0019276855558857224, 0.0017217514421272201,
       0.0014135492607468354, 0.0010500000000000002, 0.0006864507392531647, 0.0003782485578727799,
       0.0001723144441142776, 0.0001, 0.0001723144441142775, 0.0003782485578727797, 0.0006864507392531641},
      "WarmupCosineLR log");
  // DeepSpeed's defaults: warmup_min_ratio 0, cos_min_ratio 1e-4; warmup_num_steps 0 is raised to 2.
  LrConfig d = deepspeed(LrSchedule::warmup_cosine, 1e-3f, 0.0f, 0, WarmupType::linear, 6);
  expect_deepspeed_lrs(d,
                       {0.0, 0.0, 0.0005, 0.0008535680352542144, 0.00050005, 0.0001465319647457856,
                        1.0000000000000001e-07, 0.00014653196474578547},
                       "WarmupCosineLR linear, defaults");
}

TEST(LrSchedule, TheDeepSpeedDefaultsAreDeepSpeeds) {
  LrConfig c;
  EXPECT_EQ(c.warmup_type, WarmupType::log);
  EXPECT_FLOAT_EQ(c.warmup_min_ratio, 0.0f);
  EXPECT_FLOAT_EQ(c.cos_min_ratio, 1e-4f);
}

TEST(LrSchedule, WarmupCosineThatWouldDivideByZeroIsRefusedBeforeTheRun) {
  LrConfig c = deepspeed(LrSchedule::warmup_cosine, 1e-3f, 0.0f, 5, WarmupType::log, 5);
  EXPECT_NO_THROW(check_lr_config(c, 6, "cfg"));  // step 7 would be the first past warm-up
  try {
    check_lr_config(c, 7, "cfg.json");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "cfg.json: WarmupCosineLR with total_num_steps 5 equal to warmup_num_steps"),
              std::string::npos)
        << e.what();
  }
  c.total_num_steps = 6;
  EXPECT_NO_THROW(check_lr_config(c, 100, "cfg"));
}

TEST(LrSchedule, TheRanksCompareTheDeepSpeedSettingsToo) {
  LrConfig c;
  EXPECT_EQ(describe_lr_schedule(c), "constant");
  c.schedule = LrSchedule::warmup_decay;
  c.total_num_steps = 10;
  EXPECT_EQ(describe_lr_schedule(c), "warmup-decay (warmup_type log, total_num_steps 10)");
}

// A warm-up that outlasts the schedule's total (DeepSpeed only warns) leaves every step past the total at
// learning rate 0 (WarmupDecayLR) or on a cosine run backwards (WarmupCosineLR): refused when the run has
// such steps, naming both numbers; a run that ends inside the warm-up is left alone.
TEST(LrSchedule, AWarmupThatOutlastsItsTotalIsRefusedWhenTheRunGoesPastTheTotal) {
  for (LrSchedule s : {LrSchedule::warmup_decay, LrSchedule::warmup_cosine}) {
    LrConfig c = deepspeed(s, 1e-3f, 0.0f, 100, WarmupType::linear, 50);
    try {
      check_lr_config(c, 200, "cfg.json");
      ADD_FAILURE() << lr_schedule_name(s) << ": no error";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("cfg.json: " + std::string(s == LrSchedule::warmup_decay ? "WarmupDecayLR" : "WarmupCosineLR") +
                       "'s total_num_steps 50 is below its warmup_num_steps 100"),
                std::string::npos)
          << m;
      EXPECT_NE(m.find("steps 51 to 200"), std::string::npos) << m;
    }
    EXPECT_NO_THROW(check_lr_config(c, 50, "cfg")) << "the run ends within the total";
    c.total_num_steps = 101;
    EXPECT_NO_THROW(check_lr_config(c, 200, "cfg")) << "a total longer than the warm-up";
  }
}

}  // namespace
}  // namespace tz
