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

}  // namespace
}  // namespace tz
