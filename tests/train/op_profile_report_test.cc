// Tests train/op_profile_report.h: which steps --profile-ops profiles, and the table's figures from given
// rows (per step, shares of the step, achieved rates against the peaks).
#include "train/op_profile_report.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace tz {
namespace {

TEST(ProfileWindow, ProfilesNStepsAfterTheFirstAsManyAsTheRunHas) {
  ProfileWindow w = profile_window(3, 0, 10);
  EXPECT_EQ(w.first, 2);
  EXPECT_EQ(w.last, 4);
  EXPECT_EQ(w.note, "");
  w = profile_window(3, 5, 10);  // resumed after step 5
  EXPECT_EQ(w.first, 7);
  EXPECT_EQ(w.last, 9);
  w = profile_window(20, 0, 6);
  EXPECT_EQ(w.first, 2);
  EXPECT_EQ(w.last, 6);
  EXPECT_EQ(w.note, "20 steps asked after the warm-up step, 5 in the run");
  w = profile_window(4, 0, 1);  // one step: that one, said so
  EXPECT_EQ(w.first, 1);
  EXPECT_EQ(w.last, 1);
  EXPECT_NE(w.note.find("one-time set-up"), std::string::npos) << w.note;
  EXPECT_EQ(profile_window(0, 0, 10).first, 0);  // off
  EXPECT_EQ(profile_window(3, 10, 10).first, 0);  // nothing left to run
}

// The line of `op` in the table.
std::string line_of(const std::string& table, const std::string& op) {
  std::istringstream in(table);
  for (std::string l; std::getline(in, l);)
    if (l.rfind(op + " ", 0) == 0) return l;
  return {};
}

TEST(ProfileReport, FiguresArePerStepAndRatesAreSetAgainstThePeaks) {
  ProfileReport r;
  r.window = {2, 3, ""};
  r.clock = "cuda events";
  r.step_ms = 100;
  r.forward_ms = 30, r.backward_ms = 60, r.optimizer_ms = 10;
  r.peaks = {4.0, 1000.0, 100.0, "test peaks"};
  // Over 2 steps: 40 ms of products of 8e10 FLOPs (2 TFLOP/s: half the peak), 10 ms moving 2 GB (200
  // GB/s: a fifth of the memory's peak).
  r.ops = {{"gelu", 8, 10.0, 0, 2e9}, {"qkv.fwd", 4, 40.0, 8e10, 1e6}};
  r.comm.calls[int(Collective::all_gather)] = 6;
  r.comm.busy_seconds[int(Collective::all_gather)] = 0.010;
  r.comm.bytes_sent[int(Collective::all_gather)] = 5e8;  // 50 GB/s: half the collectives' peak
  const std::string t = r.table();
  EXPECT_EQ(line_of(t, "qkv.fwd"),
            "qkv.fwd                            2.0     20.000   20.0%      2.00         -   50.0%");
  EXPECT_EQ(line_of(t, "gelu"),
            "gelu                               4.0      5.000    5.0%         -     200.0   20.0%");
  EXPECT_EQ(line_of(t, "all_gather (comm)"),
            "all_gather (comm)                  3.0      5.000    5.0%         -      50.0   50.0%");
  EXPECT_EQ(line_of(t, "forward"), "forward                                    30.000   30.0%");
  EXPECT_NE(t.find("op profile: steps 2-3 (2 steps), ops timed by cuda events"), std::string::npos) << t;
  EXPECT_NE(t.find("peaks: test peaks"), std::string::npos) << t;
  // Rows by time, most first.
  EXPECT_LT(t.find("qkv.fwd"), t.find("gelu"));

  const nlohmann::json j = r.record()["profile"];
  EXPECT_EQ(j["first_step"], 2);
  EXPECT_EQ(j["clock"], "cuda events");
  ASSERT_EQ(j["ops"].size(), 3u);
  EXPECT_EQ(j["ops"][0]["op"], "qkv.fwd");
  EXPECT_DOUBLE_EQ(j["ops"][0]["tflops"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["ops"][0]["share_of_peak"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["ops"][0]["share_of_step"].get<double>(), 0.2);
}

TEST(ProfileReport, UnknownPeaksPrintNoShareOfPeakAndSaySoInTheHeader) {
  ProfileReport r;
  r.window = {1, 1, "the run has one step"};
  r.clock = "wall";
  r.step_ms = 10;
  r.ops = {{"gelu", 1, 1.0, 0, 1e6}};
  const std::string t = r.table();
  EXPECT_EQ(line_of(t, "gelu"), "gelu                               1.0      1.000   10.0%         -       1.0       -");
  EXPECT_NE(t.find("peaks: unknown (give --profile-hardware)"), std::string::npos) << t;
  EXPECT_NE(t.find("(the run has one step)"), std::string::npos) << t;
  EXPECT_FALSE(r.record()["profile"]["ops"][0].contains("share_of_peak"));
}

}  // namespace
}  // namespace tz
