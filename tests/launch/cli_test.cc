// The tierzero command line in-process: help lists every flag with its default, bad flags and bad
// values fail with a message naming them, and training failures exit non-zero with the reason.
#include "launch/cli.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/common/test_dir.h"

namespace tz {
namespace {

struct CliRun {
  int rc;
  std::string out, err;
};

CliRun cli(std::vector<std::string> args) {
  args.insert(args.begin(), "tierzero");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int rc = run_cli(int(argv.size()), argv.data());
  CliRun r{rc, ::testing::internal::GetCapturedStdout(), ::testing::internal::GetCapturedStderr()};
  return r;
}

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

TEST(Cli, TopLevelHelpListsTheCommands) {
  CliRun r = cli({"--help"});
  EXPECT_EQ(r.rc, 0);
  for (const char* c : {"train", "data", "bench"}) EXPECT_TRUE(has(r.out, c)) << r.out;
}

TEST(Cli, TrainHelpListsEveryFlagWithItsDefault) {
  CliRun r = cli({"train", "--help"});
  EXPECT_EQ(r.rc, 0);
  for (const char* f : {"--model", "--n-layer", "--n-head", "--n-embd", "--vocab", "--seq-len", "--data", "--val-data",
                        "--init-from", "--steps", "--micro-batch", "--lr ", "--warmup", "--lr-schedule", "--min-lr",
                        "--weight-decay", "--beta1", "--beta2", "--eps", "--grad-clip", "--seed", "--dtype",
                        "--save-safetensors", "--metrics", "--device ", "--device-mem", "--checkpoint-activations"})
    EXPECT_TRUE(has(r.out, f)) << "missing " << f;
  EXPECT_TRUE(has(r.out, "(=200)")) << r.out;       // --steps default
  EXPECT_TRUE(has(r.out, "(=constant)")) << r.out;  // --lr-schedule default
}

TEST(Cli, UnknownFlagFailsNamingIt) {
  CliRun r = cli({"train", "--stepz", "3"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(has(r.err, "stepz")) << r.err;
}

TEST(Cli, BadValueFailsNamingTheFlag) {
  CliRun r = cli({"train", "--steps", "many"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(has(r.err, "steps")) << r.err;
  r = cli({"train", "--dtype", "fp8"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(has(r.err, "fp8")) << r.err;
}

// NaN and Inf are numbers to the flag parser: each setting that would train on garbage is refused
// before anything starts, naming the flag and the value; so is the same value from --config.
TEST(Cli, NonFiniteAndOutOfRangeOptimizerSettingsAreRefusedBeforeTraining) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--lr", "nan"}, "--lr must be in [0, 10], got nan"},
      {{"--lr", "inf"}, "--lr must be in [0, 10], got inf"},
      {{"--lr", "-1e-3"}, "--lr must be in [0, 10], got -0.001"},
      {{"--eps", "nan"}, "--eps must be in (0, 1], got nan"},
      {{"--weight-decay", "-inf"}, "--weight-decay must be in [0, 100], got -inf"},
      {{"--min-lr", "0.1", "--lr", "0.01"}, "--min-lr must be in [0, 0.01] (0 to --lr), got 0.1"},
      {{"--warmup", "-5"}, "--warmup must be in [0, 2147483647] steps, got -5"},
      {{"--grad-clip", "nan"}, "--grad-clip must be in [0, 3.40282e+38] (0: off), got nan"},
      {{"--beta2", "1"}, "--beta2 must be in [0, 1), got 1"},
      {{"--lr", "10.5"}, "--lr must be in [0, 10], got 10.5"},
      {{"--comm-timeout", "1e10"},
       "--comm-timeout must be in [0.001, 604800] seconds (1 ms to 7 days), got 10000000000"},
      {{"--seed", "-1"}, "--seed must be a whole number in [0, 2^64 - 1], got '-1'"},
      {{"--comm-timeout", "inf"}, "--comm-timeout must be in [0.001, 604800] seconds (1 ms to 7 days), got inf"},
  };
  for (const auto& [flags, message] : cases) {
    std::vector<std::string> args = {"train", "--steps", "1"};
    args.insert(args.end(), flags.begin(), flags.end());
    CliRun r = cli(args);
    EXPECT_EQ(r.rc, 1) << flags[0];
    EXPECT_TRUE(has(r.err, message)) << r.err;
    EXPECT_FALSE(has(r.out, "step ")) << "trained with " << flags[0] << " " << flags[1];
  }
  testing::TestDir dir;
  const std::string cfg = dir.file("nan.json");
  FILE* f = std::fopen(cfg.c_str(), "w");
  std::fputs(R"({"optimizer": {"type": "AdamW", "params": {"lr": -0.5}}})", f);
  std::fclose(f);
  CliRun r = cli({"train", "--steps", "1", "--config", cfg});
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(has(r.err, "optimizer.params.lr is -0.5; allowed: a number in [0, 10]")) << r.err;
  // JSON has no NaN or Inf; a number too large for a double names the file.
  f = std::fopen(cfg.c_str(), "w");
  std::fputs(R"({"optimizer": {"type": "AdamW", "params": {"lr": 1e400}}})", f);
  std::fclose(f);
  r = cli({"train", "--steps", "1", "--config", cfg});
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(has(r.err, cfg + " is not valid JSON: number overflow parsing '1e400'")) << r.err;
}

TEST(Cli, UnknownCommandExitsWithUsage) {
  CliRun r = cli({"trian"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(has(r.err, "unknown command 'trian'")) << r.err;
}

TEST(Cli, TrainThatDoesNotFitDeviceMemExitsNonZeroWithTheBudgetError) {
  CliRun r = cli({"train", "--steps", "1", "--device-mem", "512K"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(has(r.err, "out of device memory budget")) << r.err;
  EXPECT_TRUE(has(r.err, "512.00 KiB")) << r.err;
}

TEST(Cli, TrainRunsAndPrintsAProgressLinePerStep) {
  CliRun r = cli({"train", "--steps", "3", "--micro-batch", "2", "--seq-len", "16"});
  EXPECT_EQ(r.rc, 0) << r.err;
  // Each check looks at the line it names: one progress line per step, with its fields in order, and
  // the validation line after the last step.
  auto line_matching = [&](const std::string& pattern) {
    const std::regex re(pattern);
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);)
      if (std::regex_match(line, re)) return true;
    return false;
  };
  for (int s = 1; s <= 3; ++s) {
    const std::string progress = "step +" + std::to_string(s) +
                                 "/3 \\| loss [0-9]+\\.[0-9]{4} \\| lr [0-9.e+-]+ \\| norm [0-9.]+ \\| +[0-9.]+ ms "
                                 "\\(comm wait [0-9.]+\\) \\| [0-9]+ tok/s \\| device .+ \\| host .+ \\| optimizer [0-9.]+ ms "
                                 "\\| eta [0-9]+(s|m[0-9]{2}s|h[0-9]{2}m)";
    EXPECT_TRUE(line_matching(progress)) << "no line matching '" << progress << "' in\n" << r.out;
  }
  const std::string val = "step 3 \\| val loss [0-9]+\\.[0-9]{4} \\([0-9]+ batches x 1 rank\\)";
  EXPECT_TRUE(line_matching(val)) << "no line matching '" << val << "' in\n" << r.out;
}

TEST(Cli, PreparedTokenFilesTrainAndTheModelSavesAsSafetensors) {
  testing::TestDir dir;
  std::string txt = dir.file("a.txt"), train = dir.file("train.bin"), val = dir.file("val.bin");
  {
    std::FILE* f = std::fopen(txt.c_str(), "w");
    for (int i = 0; i < 200; ++i) std::fputs("the quick brown fox jumps over the lazy dog. ", f);
    std::fclose(f);
  }
  CliRun r = cli({"data", "prepare", "--input", txt, "--output", train, "--val-output", val});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(has(r.out, "wrote 8101 tokens")) << r.out;  // 200 x 45 bytes + a newline = 9001; 900 validate
  std::string st = dir.file("m.safetensors");
  r = cli({"train", "--data", train, "--val-data", val, "--steps", "2", "--micro-batch", "2", "--seq-len", "32",
           "--save-safetensors", st});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(has(r.out, "saved " + st)) << r.out;
  std::FILE* f = std::fopen(st.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
}

TEST(Cli, InitFromTakesTheHeadCountFromNHeadAndRefusesAnUnknownWidthWithoutIt) {
  testing::TestDir dir;
  std::string st = dir.file("w24.safetensors");
  CliRun r = cli({"train", "--n-layer", "1", "--n-head", "2", "--n-embd", "24", "--steps", "1", "--micro-batch", "1",
                  "--seq-len", "16", "--save-safetensors", st});
  ASSERT_EQ(r.rc, 0) << r.err;
  r = cli({"train", "--init-from", st, "--steps", "1", "--micro-batch", "1", "--seq-len", "16"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(has(r.err, "give its head count with --n-head")) << r.err;
  r = cli({"train", "--init-from", st, "--n-head", "2", "--steps", "1", "--micro-batch", "1", "--seq-len", "16"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(has(r.out, "1 layers, 2 heads, 24 wide")) << r.out;
}

// The fine-tuning scene: start from a GPT-2 safetensors file with the optimizer offloaded to the host
// tier; every step prints the host memory in use and the optimizer update time.
TEST(Cli, FineTuningFromSafetensorsWithCpuOffloadPrintsHostMemoryAndOptimizerTimePerStep) {
  testing::TestDir dir;
  std::string st = dir.file("base.safetensors");
  CliRun r = cli({"train", "--steps", "1", "--micro-batch", "1", "--seq-len", "16", "--save-safetensors", st});
  ASSERT_EQ(r.rc, 0) << r.err;
  r = cli({"train", "--init-from", st, "--n-head", "4", "--offload-optimizer", "cpu", "--steps", "3", "--micro-batch",
           "1", "--seq-len", "16", "--lr", "1e-4"});
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const char* step : {"step     1/3", "step     2/3", "step     3/3"}) {
    std::size_t at = r.out.find(step);
    ASSERT_NE(at, std::string::npos) << r.out;
    std::string line = r.out.substr(at, r.out.find('\n', at) - at);
    EXPECT_TRUE(has(line, "| host ")) << line;
    EXPECT_TRUE(has(line, "| optimizer ")) << line;
  }
  EXPECT_TRUE(has(r.out, "fp32 master                              host")) << r.out;
}

}  // namespace
}  // namespace tz
