// The shard map: every flat group padded so it splits evenly into N shards, rank r owning shard r.
// One map serves working params, gradients and optimizer states, so a shard is just {offset, count}.
#pragma once

#include <cstddef>
#include <vector>

#include "model/param_layout.h"

namespace tz {

inline constexpr std::size_t kShardAlign = 16;  // elements; keeps every shard 64-byte aligned in fp32

struct Shard {
  std::size_t offset = 0;  // elements from the group's start
  std::size_t count = 0;
};

struct GroupShards {
  std::size_t count = 0;        // the group's elements (layout)
  std::size_t padded = 0;       // shard_count x world: what collectives move
  std::size_t shard_count = 0;  // elements each rank owns
};

class ShardMap {
 public:
  ShardMap() = default;  // no groups, a world of one
  // Each shard a multiple of `align` elements (int8 optimizer states ask for 256: whole quantization
  // blocks of every tensor that starts on one).
  ShardMap(const ParamLayout& layout, int world, int rank, std::size_t align = kShardAlign);

  int world() const { return world_; }
  int rank() const { return rank_; }
  int groups() const { return int(groups_.size()); }
  const GroupShards& group(int g) const { return groups_[g]; }
  // This rank's shard of group g (offsets relative to the padded group).
  Shard shard(int g) const { return shard_of(g, rank_); }
  Shard shard_of(int g, int rank) const;
  std::size_t total_padded() const;
  std::size_t total_shard() const;

 private:
  int world_ = 1, rank_ = 0;
  std::vector<GroupShards> groups_;
};

}  // namespace tz
