// Progress::text: the figures of a progress line, exactly.
#include "core/progress.h"

#include <gtest/gtest.h>

namespace tz {
namespace {

TEST(Progress, TheLineSaysBytesDoneOfTotalTheRateAndTheTimeLeft) {
  // 1 MiB of 4 MiB in 0.5 s: 2.097152 MB/s, 3 MiB left at that rate is 1.5 s (printed to the second).
  EXPECT_EQ(Progress::text("saving checkpoint step-00000002", 1 << 20, 4 << 20, 0.5),
            "saving checkpoint step-00000002: 1.00 MiB of 4.00 MiB (25%), 2.1 MB/s, 2 s left");
}

TEST(Progress, MinutesAndHoursLeftAreWrittenAsSuch) {
  // 1 GiB of 101 GiB at 1 GiB per 10 s: 1000 s left, 16m40s; of 1001 GiB: 10000 s, 2h46m.
  const std::uint64_t gib = std::uint64_t(1) << 30;
  EXPECT_EQ(Progress::text("x", gib, 101 * gib, 10), "x: 1.00 GiB of 101.00 GiB (1%), 107.4 MB/s, 16m40s left");
  EXPECT_EQ(Progress::text("x", gib, 1001 * gib, 10), "x: 1.00 GiB of 1001.00 GiB (0%), 107.4 MB/s, 2h46m left");
}

TEST(Progress, AnUnknownTotalShowsTheBytesAndTheRateAndNothingBeforeTheFirstByte) {
  EXPECT_EQ(Progress::text("reading", 3000, 0, 1), "reading: 2.93 KiB, 0.0 MB/s");
  EXPECT_EQ(Progress::text("reading", 0, 100, 0), "reading: 0 B of 100 B (0%)");
  EXPECT_EQ(Progress::text("done", 100, 100, 2), "done: 100 B of 100 B (100%), 0.0 MB/s");
}

}  // namespace
}  // namespace tz
