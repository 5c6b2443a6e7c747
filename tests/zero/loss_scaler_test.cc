// LossScaler follows DeepSpeed's DynamicLossScaler: hysteresis before halving, doubling after a window
// of clean steps, a floor, and a static scale that never moves.
#include "zero/loss_scaler.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace tz {
namespace {

TEST(LossScaler, StartsAtTwoToTheInitialPowerAndDoublesAfterEachCleanWindow) {
  LossScaleOptions o;
  o.initial_scale_power = 10;
  o.loss_scale_window = 3;
  LossScaler s(o);
  EXPECT_EQ(s.scale(), 1024.0f);
  EXPECT_FALSE(s.update(false));
  EXPECT_FALSE(s.update(false));
  EXPECT_EQ(s.scale(), 1024.0f);
  EXPECT_FALSE(s.update(false));
  EXPECT_EQ(s.scale(), 2048.0f);
}

TEST(LossScaler, HysteresisDelaysTheHalvingAndOverflowsAreSkipped) {
  LossScaleOptions o;
  o.initial_scale_power = 4;
  o.hysteresis = 2;
  o.loss_scale_window = 100;
  LossScaler s(o);
  EXPECT_TRUE(s.update(true));   // first overflow: skip, scale kept (hysteresis 2 -> 1)
  EXPECT_EQ(s.scale(), 16.0f);
  EXPECT_TRUE(s.update(true));   // second: halve
  EXPECT_EQ(s.scale(), 8.0f);
  EXPECT_TRUE(s.update(true));   // hysteresis stays spent until a window completes
  EXPECT_EQ(s.scale(), 4.0f);
}

TEST(LossScaler, NeverDropsBelowTheMinimum) {
  LossScaleOptions o;
  o.initial_scale_power = 1;
  o.hysteresis = 1;
  o.min_loss_scale = 1;
  LossScaler s(o);
  s.update(true);
  s.update(true);
  s.update(true);
  EXPECT_EQ(s.scale(), 1.0f);
}

TEST(LossScaler, AStaticScaleNeverChangesButOverflowsStillSkip) {
  LossScaleOptions o;
  o.loss_scale = 128;
  LossScaler s(o);
  EXPECT_TRUE(s.update(true));
  for (int i = 0; i < 5000; ++i) s.update(false);
  EXPECT_EQ(s.scale(), 128.0f);
}

TEST(LossScaler, RefusesBadSettings) {
  LossScaleOptions o;
  o.hysteresis = 0;
  EXPECT_THROW(LossScaler{o}, Error);
  o = {};
  o.loss_scale = -1;
  EXPECT_THROW(LossScaler{o}, Error);
}

// At the smallest scale an overflow cannot lower it any further: 20 in a row stop training with an error
// (a clean step in between resets the count), dynamic and static alike.
TEST(LossScaler, TwentyOverflowsInARowAtTheMinimumScaleAreAnError) {
  LossScaleOptions o;
  o.initial_scale_power = 1;  // 2, halved once to the minimum 1
  o.hysteresis = 1;
  o.min_loss_scale = 1;
  LossScaler s(o);
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 1.0f);
  for (int i = 0; i < LossScaler::kMaxOverflowsAtMin - 2; ++i) EXPECT_TRUE(s.update(true));
  EXPECT_FALSE(s.update(false));  // a clean step resets the count
  for (int i = 0; i < LossScaler::kMaxOverflowsAtMin - 1; ++i) EXPECT_TRUE(s.update(true));
  try {
    s.update(true);
    FAIL() << "the 20th overflow in a row at the minimum scale did not stop training";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("20 steps in a row overflowed at the smallest loss scale (1)"),
              std::string::npos)
        << e.what();
  }
  LossScaleOptions st;
  st.loss_scale = 128;  // static: always the smallest
  LossScaler fixed(st);
  for (int i = 0; i < LossScaler::kMaxOverflowsAtMin - 1; ++i) EXPECT_TRUE(fixed.update(true));
  EXPECT_THROW(fixed.update(true), Error);
}

}  // namespace
}  // namespace tz
