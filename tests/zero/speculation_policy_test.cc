// Tests zero/speculation_policy.h: when the speculative CPU Adam stops and resumes, from each step's
// outcome (would its speculative update have stood?).
#include "zero/speculation_policy.h"

#include <gtest/gtest.h>

#include <string>

namespace tz {
namespace {

// Feeds outcomes ('k': would keep, 'r': would roll back) and returns, after each, whether the next step
// speculates ('+') or not ('-').
std::string run(SpeculationPolicy& p, const std::string& outcomes) {
  std::string after;
  for (char c : outcomes) {
    p.record(c == 'k', p.active());
    after += p.active() ? '+' : '-';
  }
  return after;
}

TEST(SpeculationPolicy, AFreshModelClippedAtEveryStepStopsAfterFourSteps) {
  SpeculationPolicy p;
  EXPECT_TRUE(p.active());
  EXPECT_EQ(run(p, "rrrrrrrrrrrr"), "+++---------");
  EXPECT_EQ(p.speculated_steps(), 4);
  EXPECT_EQ(p.rolled_back_steps(), 4);
  EXPECT_DOUBLE_EQ(p.rollback_rate(), 1.0);
}

TEST(SpeculationPolicy, ResumesOnceAFullWindowHasAtMostOneRollback) {
  SpeculationPolicy p;
  run(p, "rrrr");
  ASSERT_FALSE(p.active());
  // Clipping stops: the window still holds the four clipped steps until they age out.
  EXPECT_EQ(run(p, "kkkkkkk"), "------+");
  EXPECT_EQ(p.speculated_steps(), 4);  // nothing speculated while off
  EXPECT_EQ(run(p, "kk"), "++");
  EXPECT_EQ(p.speculated_steps(), 6);
  EXPECT_NEAR(p.rollback_rate(), 4.0 / 6, 1e-12);
}

TEST(SpeculationPolicy, OccasionalClippingKeepsItOnAndMostlyClippedTurnsItOff) {
  SpeculationPolicy p;
  EXPECT_EQ(run(p, "krkrkrkrkrkr"), "++++++++++++");  // half: not more than half rolled back
  EXPECT_EQ(run(p, "r"), "-");  // 5 of the last 8 rolled back
  SpeculationPolicy q;
  EXPECT_EQ(run(q, "kkkkkkkrkkkkrkk"), "+++++++++++++++");  // fine-tuning: rare clipping
}

}  // namespace
}  // namespace tz
