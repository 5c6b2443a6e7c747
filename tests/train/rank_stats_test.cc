// Tests train/rank_stats.h and the metrics file's reading (train/metrics_file.h) on made-up figures: the
// per-phase summary over ranks, the straggler rule (named after 5 steps, over a window of 10, against
// the lower median, never for less than 1 ms a step), and what a metrics file left by a run holds (a last
// line cut off by a kill is not a record; it is cut off when the file is opened to append).
#include "train/rank_stats.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "tests/common/test_dir.h"
#include "train/metrics_file.h"

namespace tz {
namespace {

// `n` ranks with own work (step less comm wait) `work[r]` ms, and `data[r]` ms of data loading.
std::vector<RankSample> step(const std::vector<double>& work, double wait = 5) {
  std::vector<RankSample> all(work.size());
  for (std::size_t r = 0; r < work.size(); ++r) {
    all[r].ms = {double(r), 1, 2, 3, wait, work[r] + wait};
    all[r].bytes = {100.0 + double(r), 200, 0};
  }
  return all;
}

TEST(RankStats, SummarisesEachPhaseOverRanks) {
  RankStats s({"a", "b", "c"}, 1.5);
  s.add(step({10, 30, 20}), 0.25);
  const nlohmann::json j = s.record();
  EXPECT_EQ(j["ms"]["step"],
            (nlohmann::json{{"min", 15.0}, {"median", 25.0}, {"max", 35.0}, {"slowest_rank", 1}}));
  EXPECT_EQ(j["ms"]["data"]["slowest_rank"], 2);
  EXPECT_EQ(j["bytes"]["device"], (nlohmann::json{100, 101, 102}));
  EXPECT_EQ(j["gather_ms"], 0.25);
  EXPECT_TRUE(s.straggler_record().is_null());
}

TEST(RankStats, MedianOfAnEvenCountIsTheLowerMiddleRank) {
  EXPECT_EQ(median_rank_value({4, 1}), 1);
  EXPECT_EQ(median_rank_value({4, 1, 3, 2}), 2);
  EXPECT_EQ(median_rank_value({5, 1, 3}), 3);
}

TEST(RankStats, AStragglerIsNamedAfterFiveStepsWithItsHost) {
  RankStats s({"h0", "h1"}, 1.5);
  for (int i = 1; i <= 4; ++i) {
    s.add(step({10, 20}), 0);
    EXPECT_EQ(s.straggler().rank, -1) << "step " << i;
  }
  s.add(step({10, 20}), 0);
  EXPECT_EQ(s.straggler_record(), (nlohmann::json{{"rank", 1}, {"host", "h1"}, {"ratio", 2.0}}));
}

TEST(RankStats, TheWindowForgetsAStragglerAfterTenSteps) {
  RankStats s({"h0", "h1"}, 1.5);
  for (int i = 0; i < 10; ++i) s.add(step({10, 40}), 0);
  ASSERT_EQ(s.straggler().rank, 1);
  int cleared = 0;
  for (int i = 1; i <= 10 && !cleared; ++i) {
    s.add(step({10, 10}), 0);
    if (s.straggler().rank < 0) cleared = i;
  }
  // Sums over 10 steps: 10 x 10 against (10 - i) x 40 + i x 10 <= 1.5 x 100 from i = 9 on.
  EXPECT_EQ(cleared, 9);
}

TEST(RankStats, NoStragglerBelowTheThresholdOrUnderAMillisecondAStep) {
  RankStats a({"h0", "h1", "h2"}, 1.5);
  for (int i = 0; i < 10; ++i) a.add(step({10, 14, 12}), 0);
  EXPECT_EQ(a.straggler().rank, -1);
  RankStats b({"h0", "h1"}, 1.5);  // 3x, but 0.2 ms a step
  for (int i = 0; i < 10; ++i) b.add(step({0.1, 0.3}), 0);
  EXPECT_EQ(b.straggler().rank, -1);
  RankStats one({"h0"}, 1.5);
  for (int i = 0; i < 10; ++i) one.add(step({10}), 0);
  EXPECT_EQ(one.straggler().rank, -1);
}

TEST(MetricsFile, ACutLastLineIsNoRecordAndIsCutOffOnOpening) {
  testing::TestDir dir;
  const std::string path = dir.file("m.jsonl");
  const std::string whole = "{\"event\":\"start\",\"run_id\":\"ab\",\"step\":0}\n{\"loss\":5,\"step\":1}\n";
  std::ofstream(path) << whole << "{\"loss\":4.9,\"st";
  const MetricsFileState st = read_metrics_file_state(path, "--metrics");
  EXPECT_EQ(st.records, 2u);
  EXPECT_EQ(st.runs, std::vector<std::string>{"ab"});
  EXPECT_FALSE(st.foreign);
  check_metrics_file(path, "ab", true);  // its own run's resume: accepted
  EXPECT_THROW(check_metrics_file(path, "cd", true), Error);
  EXPECT_THROW(check_metrics_file(path, "cd", false), Error);
  {
    MetricsFile f(path);
    EXPECT_EQ(f.cut_bytes(), 15u);
    f.write({{"event", "resume"}, {"run_id", "ab"}, {"step", 1}});
  }
  std::stringstream got;
  got << std::ifstream(path).rdbuf();
  EXPECT_EQ(got.str(), whole + "{\"event\":\"resume\",\"run_id\":\"ab\",\"step\":1}\n");
}

TEST(MetricsFile, AnEmptyOrAbsentFileSuitsAFreshRunAndAForeignOneNoRun) {
  testing::TestDir dir;
  check_metrics_file(dir.file("absent.jsonl"), "", false);
  std::ofstream(dir.file("empty.jsonl")).flush();
  check_metrics_file(dir.file("empty.jsonl"), "", false);
  std::ofstream(dir.file("notes.jsonl")) << "{\"loss\":5}\n";
  EXPECT_TRUE(read_metrics_file_state(dir.file("notes.jsonl"), "--metrics").foreign);
  EXPECT_THROW(check_metrics_file(dir.file("notes.jsonl"), "", true), Error);
  // A line of 2 MiB is no record (and is not held whole).
  std::ofstream(dir.file("long.jsonl")) << std::string(2 << 20, 'x') << "\n";
  const MetricsFileState st = read_metrics_file_state(dir.file("long.jsonl"), "--metrics");
  EXPECT_TRUE(st.foreign);
  EXPECT_EQ(st.records, 1u);
}

}  // namespace
}  // namespace tz
