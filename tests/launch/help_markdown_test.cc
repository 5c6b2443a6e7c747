// launch/help_markdown.h: the reference lists every flag each command registers and every DeepSpeed key,
// from the same tables the commands parse with (so a new flag or key is documented without more work).
#include "launch/help_markdown.h"

#include <gtest/gtest.h>

#include <string>

#include "launch/ds_keys.h"
#include "launch/flag_table.h"

namespace tz {
namespace {

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

TEST(HelpMarkdown, EveryCommandHasASectionWithEachOfItsFlagsAndItsDescription) {
  const std::string doc = help_markdown();
  for (const FlagTable& t : all_flag_tables()) {
    EXPECT_TRUE(has(doc, "\n## `tierzero " + t.command + "`\n")) << t.command;
    for (const auto& o : t.desc->options()) {
      if (o->long_name() == "help") continue;
      EXPECT_TRUE(has(doc, "| `--" + o->long_name() + "` |")) << t.command << " --" << o->long_name();
      EXPECT_TRUE(has(doc, o->description())) << t.command << " --" << o->long_name();
    }
  }
}

TEST(HelpMarkdown, PlanListsOnlyItsOwnFlagsAndPointsToTrainsForTheRest) {
  const std::string doc = help_markdown();
  const std::string plan = doc.substr(doc.find("\n## `tierzero plan`\n"));
  const std::string section = plan.substr(0, plan.find("\n## ", 1));
  EXPECT_TRUE(has(section, "| `--world` |")) << section;
  EXPECT_TRUE(has(section, "[`tierzero train`](#tierzero-train)")) << section;
  EXPECT_FALSE(has(section, "| `--zero-stage` |")) << section;
}

TEST(HelpMarkdown, DefaultsAreShownAsHelpShowsThemAndSwitchesAsOff) {
  const std::string doc = help_markdown();
  EXPECT_TRUE(has(doc, "| `--steps` | `200` |")) << "a number";
  EXPECT_TRUE(has(doc, "| `--lr` | `0.0003` |")) << "a float, not its single-precision expansion";
  EXPECT_TRUE(has(doc, "| `--shuffle` | off |")) << "a switch";
  EXPECT_TRUE(has(doc, "| `--resume` | (none) |")) << "an empty default";
  EXPECT_TRUE(has(doc, "| `--metrics` | (required) |")) << "bench mfu's required flag";
}

TEST(HelpMarkdown, EveryDeepSpeedKeyIsListedWithWhatTierzeroDoesWithIt) {
  const std::string doc = help_markdown();
  for (const KeyLevel* level :
       {&top_level_keys(), &zero_keys(), &offload_optimizer_keys(), &offload_param_keys(), &aio_keys(),
        &fp16_keys(), &bf16_keys(), &optimizer_keys(), &adam_params_keys(), &scheduler_keys()}) {
    for (const ReadKey& k : level->read) EXPECT_TRUE(has(doc, std::string("| `") + k.name + "` |")) << k.name;
    for (const NoEffectKey& k : level->no_effect) EXPECT_TRUE(has(doc, k.why)) << k.name;
    for (const RefusedKey& k : level->refused)
      EXPECT_TRUE(has(doc, std::string("| `") + k.name + "` |")) << k.name;
  }
  for (LrSchedule s : {LrSchedule::warmup, LrSchedule::warmup_decay, LrSchedule::warmup_cosine})
    for (const ReadKey& k : scheduler_params_keys(s).read)
      EXPECT_TRUE(has(doc, std::string("| `") + k.name + "` |")) << k.name;
}

TEST(HelpMarkdown, NoTableCellHoldsAnUnescapedPipe) {
  // Each table row has as many unescaped pipes as its header: 4 for flags and keys, 9 for presets.
  const std::string doc = help_markdown();
  std::size_t at = 0;
  while (at < doc.size()) {
    const std::size_t end = doc.find('\n', at);
    const std::string line = doc.substr(at, end - at);
    at = end + 1;
    if (line.empty() || line[0] != '|') continue;
    int pipes = 0;
    for (std::size_t i = 0; i < line.size(); ++i) pipes += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
    EXPECT_TRUE(pipes == 4 || pipes == 9) << line;
  }
}

}  // namespace
}  // namespace tz
