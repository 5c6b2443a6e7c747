// Tests core/host_memory.h: page alignment, move-only ownership, and what happens when mlock is
// refused (simulated through the mlock seam): a clear error, or unpinned memory if the caller allows it.
#include "core/host_memory.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <utility>

#include "tests/offload/direct_io_probe.h"

namespace tz {
namespace {

int refuse_mlock(const void*, std::size_t) {
  errno = ENOMEM;  // what mlock(2) says when RLIMIT_MEMLOCK is exhausted
  return -1;
}

int count_calls_mlock(const void*, std::size_t) { return 0; }

TEST(AlignedBuffer, IsPageAlignedAndRoundedUpToWholePages) {
  for (std::size_t n :
       {std::size_t(1), std::size_t(4095), std::size_t(4096), std::size_t(4097), std::size_t(1) << 20}) {
    AlignedBuffer b(n);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % kDirectIoAlign, 0u) << n;
    EXPECT_EQ(b.bytes(), round_up(n, kDirectIoAlign)) << n;
    EXPECT_FALSE(b.pinned());
    b.data()[b.bytes() - 1] = std::byte{1};  // the whole rounded size is usable
  }
  AlignedBuffer empty(0);
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.data(), nullptr);
}

TEST(AlignedBuffer, MoveTransfersOwnershipAndLeavesTheSourceEmpty) {
  AlignedBuffer a(8192, Pinning::required, &count_calls_mlock);
  std::byte* p = a.data();
  AlignedBuffer b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_TRUE(b.pinned());
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): moved-from state is specified
  AlignedBuffer c;
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.bytes(), 8192u);
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move)
  auto v = c.view<std::uint32_t>(2048);
  EXPECT_EQ(v.size(), 2048u);
  EXPECT_THROW(c.view<std::uint32_t>(2049), Error);
}

TEST(AlignedBuffer, RefusedPinningIsAnErrorNamingTheMemlockLimitAndTheNeed) {
  std::string msg =
      test::error_message([] { AlignedBuffer b(std::size_t(3) << 20, Pinning::required, &refuse_mlock); });
  EXPECT_NE(msg.find("RLIMIT_MEMLOCK is "), std::string::npos) << msg;
  EXPECT_NE(msg.find("need 3.00 MiB"), std::string::npos) << msg;
  EXPECT_NE(msg.find("errno 12"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ulimit -l"), std::string::npos) << msg;
}

TEST(AlignedBuffer, BestEffortPinningFallsBackToUnpinnedMemoryAndSaysWhy) {
  AlignedBuffer b(std::size_t(1) << 20, Pinning::best_effort, &refuse_mlock);
  EXPECT_FALSE(b.pinned());
  ASSERT_NE(b.data(), nullptr);
  EXPECT_NE(b.pin_error().find("RLIMIT_MEMLOCK"), std::string::npos) << b.pin_error();
  b.data()[0] = std::byte{7};
}

TEST(AlignedBuffer, RealMlockEitherPinsOrExplainsWhyNot) {
  AlignedBuffer b(std::size_t(64) << 10, Pinning::best_effort);
  if (!b.pinned()) GTEST_SKIP() << "mlock refused here: " << b.pin_error();
  EXPECT_TRUE(b.pin_error().empty());
}

}  // namespace
}  // namespace tz
