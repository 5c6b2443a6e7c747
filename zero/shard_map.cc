// Padding groups into N aligned shards.
#include "zero/shard_map.h"

#include "core/error.h"

namespace tz {

ShardMap::ShardMap(const ParamLayout& layout, int world, int rank, std::size_t align) : world_(world), rank_(rank) {
  TZ_CHECK(world >= 1 && rank >= 0 && rank < world, "bad rank ", rank, " of world ", world);
  TZ_CHECK(align >= 1 && align % kShardAlign == 0, "a shard alignment of ", align, " elements is not a multiple of ",
           kShardAlign);
  for (const GroupSpec& g : layout.groups) {
    GroupShards s;
    s.count = g.count;
    std::size_t unit = align * std::size_t(world);
    s.padded = (g.count + unit - 1) / unit * unit;
    s.shard_count = s.padded / std::size_t(world);
    groups_.push_back(s);
  }
}

Shard ShardMap::shard_of(int g, int rank) const {
  const GroupShards& s = groups_[g];
  return {std::size_t(rank) * s.shard_count, s.shard_count};
}

std::size_t ShardMap::total_padded() const {
  std::size_t n = 0;
  for (auto& g : groups_) n += g.padded;
  return n;
}

std::size_t ShardMap::total_shard() const {
  std::size_t n = 0;
  for (auto& g : groups_) n += g.shard_count;
  return n;
}

}  // namespace tz
