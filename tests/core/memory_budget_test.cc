// Tests core/memory_budget.h: reserve/release/peak accounting, the over-budget error message, and
// byte-size formatting and parsing.
#include "core/memory_budget.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "tests/common/error_message.h"

namespace tz {
namespace {

constexpr std::size_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB, TiB = 1024 * GiB;

using testing::error_message;

TEST(MemoryBudget, AReservationHoldsItsBytesUntilItIsDestroyed) {
  MemoryBudget b("device", 10 * KiB);
  EXPECT_EQ(b.tier(), "device");
  EXPECT_EQ(b.budget(), 10 * KiB);
  Reservation a = b.reserve(1000, "a");
  {
    Reservation r = b.reserve(3000, "b");
    EXPECT_EQ(r.bytes(), 3000u);
    EXPECT_EQ(b.used(), 4000u);
    EXPECT_EQ(b.peak(), 4000u);
  }
  EXPECT_EQ(b.used(), 1000u);
  EXPECT_EQ(b.peak(), 4000u);
  Reservation c = b.reserve(500, "c");
  EXPECT_EQ(b.used(), 1500u);
  b.reset_peak();
  EXPECT_EQ(b.peak(), 1500u);
  a.reset();
  c = Reservation();  // assigning over a reservation gives its bytes back
  EXPECT_EQ(b.used(), 0u);
}

TEST(MemoryBudget, AMovedReservationIsGivenBackOnceByItsNewOwner) {
  MemoryBudget b("host", 1 * KiB);
  std::vector<Reservation> held;
  {
    Reservation r = b.reserve(100, "r");
    held.push_back(std::move(r));
    EXPECT_EQ(r.bytes(), 0u);  // the moved-from reservation holds nothing
  }
  EXPECT_EQ(b.used(), 100u);
  Reservation s = b.reserve(200, "s");
  held[0] = std::move(s);  // gives back r's 100 bytes, takes over s's 200
  EXPECT_EQ(b.used(), 200u);
  held.clear();
  EXPECT_EQ(b.used(), 0u);
}

TEST(MemoryBudget, ReservingExactlyTheBudgetSucceedsAndOneByteMoreFails) {
  MemoryBudget b("host", 4096);
  Reservation a = b.reserve(4000, "a");
  Reservation c = b.reserve(96, "b");
  EXPECT_EQ(b.used(), 4096u);
  EXPECT_THROW((void)b.reserve(1, "c"), Error);
  EXPECT_EQ(b.used(), 4096u);  // a refused request leaves the accounting unchanged
  EXPECT_EQ(b.peak(), 4096u);
}

TEST(MemoryBudget, ExceedingTheBudgetNamesTheTierBudgetRequestAndCurrentUse) {
  MemoryBudget b("host", 1 * MiB);
  Reservation held = b.reserve(512 * KiB, "fp32 master");
  const std::string msg = error_message([&] { (void)b.reserve(768 * KiB, "adam moments"); });
  EXPECT_NE(msg.find("host"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1.00 MiB"), std::string::npos) << "budget missing: " << msg;
  EXPECT_NE(msg.find("768.00 KiB"), std::string::npos) << "request missing: " << msg;
  EXPECT_NE(msg.find("512.00 KiB"), std::string::npos) << "current use missing: " << msg;
  EXPECT_NE(msg.find("adam moments"), std::string::npos) << "buffer name missing: " << msg;
  EXPECT_NE(msg.find("by 256.00 KiB"), std::string::npos) << "shortfall missing: " << msg;
  EXPECT_EQ(b.used(), 512 * KiB);
}

TEST(MemoryBudget, ARequestLargerThanTheWholeBudgetIsRefused) {
  MemoryBudget b("device", 100);
  const std::string msg = error_message([&] { (void)b.reserve(101, "x"); });
  EXPECT_NE(msg.find("101 B"), std::string::npos) << msg;
  EXPECT_NE(msg.find("100 B"), std::string::npos) << msg;
  EXPECT_EQ(b.used(), 0u);
}

TEST(MemoryBudget, ARequestThatWouldWrapTheCounterAroundIsRefused) {
  MemoryBudget b("device");  // unlimited
  Reservation a = b.reserve(10, "a");
  EXPECT_THROW((void)b.reserve(kUnlimited - 5, "b"), Error);
  EXPECT_EQ(b.used(), 10u);
}

TEST(MemoryBudget, ConcurrentReservesAndReleasesAreNotLost) {
  MemoryBudget b("device", 1 * GiB);
  std::vector<std::vector<Reservation>> kept(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        Reservation r = b.reserve(3, "x");
        if (i % 2 == 0) kept[t].push_back(std::move(r));
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(b.used(), 4u * 10000 * 3);
  EXPECT_GE(b.peak(), b.used());
  kept.clear();
  EXPECT_EQ(b.used(), 0u);
}

TEST(FormatBytes, UsesBinaryUnitsWithTwoDecimals) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.00 KiB");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(3 * GiB / 2), "1.50 GiB");
  EXPECT_EQ(format_bytes(5 * TiB), "5.00 TiB");
  EXPECT_EQ(format_bytes(2048 * TiB), "2048.00 TiB");  // TiB is the largest unit
  EXPECT_EQ(format_bytes(kUnlimited), "unlimited");
}

TEST(ParseBytes, ReadsNumbersWithOptionalPowerOf1024Units) {
  EXPECT_EQ(parse_bytes("123"), 123u);
  EXPECT_EQ(parse_bytes("7B"), 7u);
  EXPECT_EQ(parse_bytes("4k"), 4 * KiB);
  EXPECT_EQ(parse_bytes("10KB"), 10 * KiB);
  EXPECT_EQ(parse_bytes("512M"), 512 * MiB);
  EXPECT_EQ(parse_bytes("2GiB"), 2 * GiB);
  EXPECT_EQ(parse_bytes("2gib"), 2 * GiB);
  EXPECT_EQ(parse_bytes("1.5G"), 3 * GiB / 2);
  EXPECT_EQ(parse_bytes("1T"), TiB);
  EXPECT_EQ(parse_bytes("0"), 0u);
  EXPECT_EQ(parse_bytes("0M"), 0u);
  EXPECT_EQ(parse_bytes("unlimited"), kUnlimited);
  EXPECT_EQ(parse_bytes("none"), kUnlimited);
}

TEST(ParseBytes, AnUnknownUnitIsAnErrorNamingTheTextAndTheUnit) {
  const std::string msg = error_message([] { parse_bytes("12Q"); });
  EXPECT_NE(msg.find("'12Q'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'Q'"), std::string::npos) << msg;
  EXPECT_THROW(parse_bytes("1e3"), Error);
  EXPECT_THROW(parse_bytes("12 M"), Error);
}

TEST(ParseBytes, TextThatIsNotANumberIsATzError) {
  for (const char* bad : {"", "abc", "-1G", "G", ".", "..", ".M", "1.2.3G", "1..5"}) {
    const std::string msg = error_message([&] { parse_bytes(bad); });
    EXPECT_NE(msg.find(std::string("'") + bad + "'"), std::string::npos) << "for '" << bad << "': " << msg;
  }
}

TEST(ParseBytes, ASizeTooLargeForSizeTIsAnError) {
  EXPECT_THROW(parse_bytes("99999999999T"), Error);
  EXPECT_THROW(parse_bytes("16777216T"), Error);            // exactly 2^64
  EXPECT_THROW(parse_bytes(std::string(400, '9')), Error);  // beyond double's range
  EXPECT_EQ(parse_bytes("8388608T"), std::size_t(1) << 63);
}

}  // namespace
}  // namespace tz
