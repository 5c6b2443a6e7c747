// Learning-rate schedule: linear warm-up, constant, and cosine decay to min_lr at the last step.
#include "zero/lr_schedule.h"

#include <gtest/gtest.h>

#include <cmath>

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
  EXPECT_THROW(parse_lr_schedule("linear"), Error);
}

}  // namespace
}  // namespace tz
