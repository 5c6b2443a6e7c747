// ShardMap: every group padded to an aligned multiple of N, each rank one contiguous slice, together
// covering the group.
#include "zero/shard_map.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace tz {
namespace {

TEST(ShardMap, EachRankOwnsOneContiguousSliceAndTheyCoverTheGroup) {
  ParamLayout layout = ParamLayout::build(model_preset("tiny"));
  for (int N : {1, 2, 3, 4, 7}) {
    for (int g = 0; g < int(layout.groups.size()); ++g) {
      std::size_t next = 0;
      for (int r = 0; r < N; ++r) {
        ShardMap m(layout, N, r);
        const GroupShards& gs = m.group(g);
        EXPECT_EQ(gs.count, layout.groups[g].count);
        EXPECT_GE(gs.padded, gs.count);
        EXPECT_LT(gs.padded - gs.count, kShardAlign * N) << "padding is less than one aligned unit per rank";
        EXPECT_EQ(gs.padded, gs.shard_count * N);
        EXPECT_EQ(gs.shard_count % kShardAlign, 0u);
        Shard s = m.shard(g);
        EXPECT_EQ(s.offset, next) << "rank " << r << " of " << N;
        EXPECT_EQ(s.count, gs.shard_count);
        next += s.count;
      }
      EXPECT_EQ(next, ShardMap(layout, N, 0).group(g).padded);
    }
  }
}

TEST(ShardMap, RefusesARankOutsideTheWorld) {
  ParamLayout layout = ParamLayout::build(model_preset("tiny"));
  EXPECT_THROW(ShardMap(layout, 2, 2), Error);
  EXPECT_THROW(ShardMap(layout, 0, 0), Error);
}

}  // namespace
}  // namespace tz
