// Tests launch/ds_scheduler.h: a DeepSpeed config's scheduler section becomes the LrConfig of DeepSpeed's
// WarmupLR, WarmupDecayLR or WarmupCosineLR with DeepSpeed's defaults, "auto" resolves as the Hugging Face
// Trainer resolves it (one printed line each), the schedule's flags win, and other schedulers, parameters
// of another scheduler and bad values are refused naming the key.
#include "launch/ds_scheduler.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "launch/ds_config.h"

namespace tz {
namespace {

using json = nlohmann::json;

const FlagGiven kNoFlags = [](const std::string&) { return false; };

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

TrainOptions applied(const std::string& doc, const FlagGiven& flags = kNoFlags, TrainOptions o = {}) {
  apply_ds_config(json::parse(doc), "cfg.json", o, flags);
  return o;
}

std::string error_of(const std::string& doc) {
  try {
    applied(doc);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DsScheduler, WarmupLrTakesDeepSpeedsDefaultsForWhatTheFileLeavesOut) {
  const TrainOptions o = applied(R"({"scheduler": {"type": "WarmupLR"}})");
  EXPECT_EQ(o.lr.schedule, LrSchedule::warmup);
  EXPECT_FLOAT_EQ(o.lr.min_lr, 0.0f);  // warmup_min_lr
  EXPECT_FLOAT_EQ(o.lr.lr, 0.001f);    // warmup_max_lr
  EXPECT_EQ(o.lr.warmup, 1000);        // warmup_num_steps
  EXPECT_EQ(o.lr.warmup_type, WarmupType::log);
  EXPECT_TRUE(o.config_lines.empty());
}

TEST(DsScheduler, EachSchedulersParametersLandInTheLrConfig) {
  TrainOptions o = applied(R"({"scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 1e-5,
      "warmup_max_lr": 2e-3, "warmup_num_steps": 10, "total_num_steps": 100, "warmup_type": "linear",
      "last_batch_iteration": -1}}})");
  EXPECT_EQ(o.lr.schedule, LrSchedule::warmup_decay);
  EXPECT_FLOAT_EQ(o.lr.min_lr, 1e-5f);
  EXPECT_FLOAT_EQ(o.lr.lr, 2e-3f);
  EXPECT_EQ(o.lr.warmup, 10);
  EXPECT_EQ(o.lr.total_num_steps, 100);
  EXPECT_EQ(o.lr.warmup_type, WarmupType::linear);

  // WarmupCosineLR scales the optimizer's lr; its ratios default to DeepSpeed's 0 and 1e-4.
  o = applied(R"({"optimizer": {"type": "AdamW", "params": {"lr": 5e-4}},
      "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 50, "warmup_num_steps": 5}}})");
  EXPECT_EQ(o.lr.schedule, LrSchedule::warmup_cosine);
  EXPECT_FLOAT_EQ(o.lr.lr, 5e-4f);
  EXPECT_EQ(o.lr.total_num_steps, 50);
  EXPECT_EQ(o.lr.warmup, 5);
  EXPECT_FLOAT_EQ(o.lr.warmup_min_ratio, 0.0f);
  EXPECT_FLOAT_EQ(o.lr.cos_min_ratio, 1e-4f);
  o = applied(R"({"scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 50,
      "warmup_min_ratio": 0.1, "cos_min_ratio": 0.05}}})");
  EXPECT_FLOAT_EQ(o.lr.warmup_min_ratio, 0.1f);
  EXPECT_FLOAT_EQ(o.lr.cos_min_ratio, 0.05f);
}

// Hugging Face fills warmup_min_lr with 0, warmup_max_lr with its learning_rate, warmup_num_steps with its
// warmup steps and total_num_steps with its number of training steps: here 0, the optimizer's lr, --warmup
// and --steps.
TEST(DsScheduler, AutoParametersResolveAsHuggingFaceResolvesThemWithOneLineEach) {
  TrainOptions flags;
  flags.steps = 40;
  flags.lr.warmup = 4;
  const TrainOptions o = applied(R"({"optimizer": {"type": "AdamW", "params": {"lr": 2e-4}},
      "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto",
                                                         "warmup_num_steps": "auto", "total_num_steps": "auto"}}})",
                                 kNoFlags, flags);
  EXPECT_FLOAT_EQ(o.lr.min_lr, 0.0f);
  EXPECT_FLOAT_EQ(o.lr.lr, 2e-4f);
  EXPECT_EQ(o.lr.warmup, 4);
  EXPECT_EQ(o.lr.total_num_steps, 40);
  const std::vector<std::string> want{
      "config: scheduler.params.warmup_num_steps \"auto\" -> 4 (--warmup, as Hugging Face resolves it from "
      "its "
      "warmup steps)",
      "config: scheduler.params.total_num_steps \"auto\" -> 40 (--steps, as Hugging Face resolves it from "
      "its "
      "number of training steps)",
      "config: scheduler.params.warmup_min_lr \"auto\" -> 0 (as Hugging Face resolves it)",
      "config: scheduler.params.warmup_max_lr \"auto\" -> 0.0002 (the optimizer's lr (optimizer.params.lr or "
      "--lr), as Hugging Face resolves it)"};
  EXPECT_EQ(o.config_lines, want);
}

TEST(DsScheduler, WarmupMaxLrOverridesTheOptimizersLrAsInDeepSpeedAndSaysSo) {
  const TrainOptions o = applied(R"({"optimizer": {"type": "Adam", "params": {"lr": 3e-5}},
      "scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": 1e-3}}})");
  EXPECT_FLOAT_EQ(o.lr.lr, 1e-3f);
  ASSERT_EQ(o.config_lines.size(), 1u);
  EXPECT_EQ(
      o.config_lines[0],
      "config: optimizer.params.lr 3e-05 has no effect: scheduler WarmupLR sets the lr, with warmup_max_lr "
      "0.001 as its peak, as in DeepSpeed");
}

TEST(DsScheduler, TheScheduleFlagsWinParameterByParameter) {
  const char* doc = R"({"scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 1e-5,
      "warmup_max_lr": 2e-3, "warmup_num_steps": 10, "total_num_steps": 100}}})";
  TrainOptions flags;
  flags.lr.lr = 7e-4f;
  flags.lr.min_lr = 1e-6f;
  flags.lr.warmup = 3;
  TrainOptions o = applied(
      doc, [](const std::string& f) { return f == "lr" || f == "min-lr" || f == "warmup"; }, flags);
  EXPECT_EQ(o.lr.schedule, LrSchedule::warmup_decay);
  EXPECT_FLOAT_EQ(o.lr.lr, 7e-4f);
  EXPECT_FLOAT_EQ(o.lr.min_lr, 1e-6f);
  EXPECT_EQ(o.lr.warmup, 3);
  EXPECT_EQ(o.lr.total_num_steps, 100);
  // --lr-schedule picks another schedule: the section is checked but none of it applies.
  TrainOptions cosine;
  cosine.lr.schedule = LrSchedule::cosine;
  o = applied(
      doc, [](const std::string& f) { return f == "lr-schedule"; }, cosine);
  EXPECT_EQ(o.lr.schedule, LrSchedule::cosine);
  EXPECT_FLOAT_EQ(o.lr.lr, TrainOptions{}.lr.lr);
  EXPECT_EQ(o.lr.warmup, 0);
  EXPECT_THROW(applied(R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": -1}}})",
                       [](const std::string& f) { return f == "lr-schedule"; }),
               Error);
}

TEST(DsScheduler, OtherSchedulersAreRefusedNamingWhatIsImplemented) {
  std::string e = error_of(R"({"scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 0}}})");
  EXPECT_TRUE(has(e, "scheduler.type \"OneCycle\" is a DeepSpeed scheduler that tierzero does not implement"))
      << e;
  EXPECT_TRUE(has(e, "WarmupLR, WarmupDecayLR and WarmupCosineLR")) << e;
  e = error_of(R"({"scheduler": {"type": "LRRangeTest"}})");
  EXPECT_TRUE(has(e, "\"LRRangeTest\" is a DeepSpeed scheduler that tierzero does not implement")) << e;
  e = error_of(R"({"scheduler": {"type": "StepLR"}})");
  EXPECT_TRUE(has(e,
                  "\"StepLR\" is not a scheduler tierzero knows (DeepSpeed would look it up in "
                  "torch.optim.lr_scheduler"))
      << e;
  e = error_of(R"({"scheduler": {"type": "warmuplr"}})");
  EXPECT_TRUE(has(e, "case-sensitive")) << e;
  e = error_of(R"({"scheduler": {"params": {}}})");
  EXPECT_TRUE(has(e, "scheduler.type is missing")) << e;
}

TEST(DsScheduler, ParametersAreEachSchedulersOwnAndCheckedLikeEveryKey) {
  struct Case {
    const char* doc;
    const char* message;
  };
  const Case cases[] = {
      {R"({"scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 10, "warmup_max_lr": 0.1}}})",
       "'scheduler.params.warmup_max_lr' is not a parameter of WarmupCosineLR"},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"total_num_steps": 10}}})",
       "'scheduler.params.total_num_steps' is not a parameter of WarmupLR"},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_num_step": 10}}})",
       "unknown key 'scheduler.params.warmup_num_step' in cfg.json; did you mean "
       "'scheduler.params.warmup_num_steps'?"},
      {R"({"scheduler": {"type": "WarmupLR", "param": {}}})", "did you mean 'scheduler.params'?"},
      {R"({"scheduler": {"type": "WarmupDecayLR", "params": {"warmup_max_lr": 0.1}}})",
       "scheduler.params.total_num_steps is missing; WarmupDecayLR requires it"},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_type": "exp"}}})",
       "scheduler.params.warmup_type is \"exp\" (a string); expected \"log\" or \"linear\""},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"last_batch_iteration": 5}}})",
       "'scheduler.params.last_batch_iteration' is a DeepSpeed key that tierzero does not implement in this "
       "version; only -1 is accepted"},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": [0.0]}}})",
       "scheduler.params.warmup_min_lr is [0.0] (an array); expected a number >= 0"},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": 0}}})",
       "scheduler.params.warmup_max_lr is 0; allowed: a number > 0"},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0.01, "warmup_max_lr": 0.001}}})",
       "scheduler.params.warmup_min_lr 0.01 is above warmup_max_lr 0.001"},
      {R"({"scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 0}}})",
       "scheduler.params.total_num_steps is 0; allowed: an integer >= 1"},
      {R"({"scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 9, "cos_min_ratio": 2}}})",
       "scheduler.params.cos_min_ratio is 2; allowed: a number in [0, 1]"},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 2.5}}})",
       "scheduler.params.warmup_num_steps is 2.5; allowed: an integer >= 0"},
      {R"({"scheduler": "WarmupLR"})", "scheduler is \"WarmupLR\" (a string); expected an object"},
      {R"({"warmup_num_steps": 10})",
       "unknown key 'warmup_num_steps' in cfg.json; did you mean "
       "'scheduler.params.warmup_num_steps'?"},
  };
  for (const Case& c : cases) {
    std::string e = error_of(c.doc);
    EXPECT_TRUE(has(e, c.message)) << c.doc << "\n  gave: " << e;
  }
  // last_batch_iteration -1, DeepSpeed's default, is accepted.
  EXPECT_EQ(error_of(R"({"scheduler": {"type": "WarmupLR", "params": {"last_batch_iteration": -1}}})"), "");
}

}  // namespace
}  // namespace tz
