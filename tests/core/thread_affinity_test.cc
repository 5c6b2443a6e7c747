// Tests core/thread_affinity.h: how a node's cores are split between its ranks, and between a rank's
// compute and I/O threads.
#include "core/thread_affinity.h"

#include <gtest/gtest.h>

#include <numeric>

namespace tz {
namespace {

std::vector<int> range(int a, int b) {
  std::vector<int> v(std::size_t(b - a));
  std::iota(v.begin(), v.end(), a);
  return v;
}

TEST(CoreBinding, EachRankGetsAnEqualSliceAndWithThreeCoresOrMoreOneForIo) {
  const CoreBinding r0 = plan_core_binding(range(0, 16), 16, 0, 2), r1 = plan_core_binding(range(0, 16), 16, 1, 2);
  EXPECT_EQ(r0.compute, range(0, 7));
  EXPECT_EQ(r0.io, std::vector<int>{7});
  EXPECT_EQ(r1.compute, range(8, 15));
  EXPECT_EQ(r1.io, std::vector<int>{15});
  EXPECT_EQ(r0.source, "local rank 0 of 2 on 16 cores");
}

TEST(CoreBinding, LeftoverCoresGoToTheFirstRanksAndSmallSlicesShareIo) {
  // 8 cores over 3 ranks: 3, 3, 2.
  EXPECT_EQ(plan_core_binding(range(0, 8), 8, 0, 3).compute, range(0, 2));
  EXPECT_EQ(plan_core_binding(range(0, 8), 8, 1, 3).compute, range(3, 5));
  const CoreBinding last = plan_core_binding(range(0, 8), 8, 2, 3);
  EXPECT_EQ(last.compute, range(6, 8));
  EXPECT_TRUE(last.io.empty()) << "2 cores: the I/O threads share them";
}

TEST(CoreBinding, TheLaunchersBindingIsKept) {
  const CoreBinding b = plan_core_binding({4, 5, 6, 7}, 16, 1, 4);
  EXPECT_EQ(b.compute, (std::vector<int>{4, 5, 6}));
  EXPECT_EQ(b.io, std::vector<int>{7});
  EXPECT_EQ(b.source, "the launcher's binding");
}

TEST(CoreBinding, MoreRanksThanCoresShareThemRoundRobin) {
  EXPECT_EQ(plan_core_binding(range(0, 2), 2, 3, 4).compute, std::vector<int>{1});
  EXPECT_NE(plan_core_binding(range(0, 2), 2, 3, 4).source.find("more ranks than the 2 cores"), std::string::npos);
}

TEST(CoreBinding, CoreListsPrintAsRanges) {
  EXPECT_EQ(cores_text({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(cores_text({5}), "5");
  EXPECT_EQ(cores_text({}), "");
}

}  // namespace
}  // namespace tz
