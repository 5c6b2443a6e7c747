// Tests the pieces of `tierzero bench calibrate` that need no second rank: the spread of a noisy term's
// rounds (perf/calibrate_comm.h).
#include <gtest/gtest.h>

#include "perf/calibrate_comm.h"

namespace tz {
namespace {

TEST(RoundSpread, TheMeanLeavesOutTheLeastAndTheLargestRound) {
  const RoundSpread s = round_spread({5, 1, 9, 3, 7});
  EXPECT_DOUBLE_EQ(s.mean, 5.0);  // (3 + 5 + 7) / 3
  EXPECT_DOUBLE_EQ(s.q1, 3.0);    // sorted 1 3 5 7 9: the 2nd and the 4th
  EXPECT_DOUBLE_EQ(s.q3, 7.0);
}

TEST(RoundSpread, BimodalRoundsGiveTheirAverageNotTheCommonMode) {
  // 10 rounds of 0.5 ms and 5 that lost a 4.5 ms scheduler tick: the median would say 0.5 ms.
  std::vector<double> v(10, 0.5e-3);
  v.insert(v.end(), 5, 5e-3);
  const RoundSpread s = round_spread(v);
  EXPECT_NEAR(s.mean, (9 * 0.5e-3 + 4 * 5e-3) / 13, 1e-15);
  EXPECT_DOUBLE_EQ(s.q1, 0.5e-3);  // sorted index lround(3.5) = 4
  EXPECT_DOUBLE_EQ(s.q3, 5e-3);    // sorted index lround(10.5) = 11
}

TEST(RoundSpread, TwoRoundsOrNoneGiveTheMedianOrZero) {
  const RoundSpread two = round_spread({1, 3});
  EXPECT_DOUBLE_EQ(two.mean, 2.0);
  EXPECT_DOUBLE_EQ(two.q1, 1.0);  // index lround(0.25) = 0
  EXPECT_DOUBLE_EQ(two.q3, 3.0);  // index lround(0.75) = 1
  const RoundSpread none = round_spread({});
  EXPECT_EQ(none.mean, 0.0);
  EXPECT_EQ(none.q1, 0.0);
  EXPECT_EQ(none.q3, 0.0);
}

}  // namespace
}  // namespace tz
