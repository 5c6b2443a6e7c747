// Stage 3 parameter gathering: a group's full working params are all-gathered from every rank's
// shard into a slot when the model acquires it, and the slot is freed on release. The order in which
// the model acquires groups is recorded on the first pass of each kind, and later passes prefetch the
// next groups (up to stage3_prefetch_bucket_size elements, within stage3_max_live_parameters) while
// the current one computes.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "core/backend.h"
#include "core/device.h"
#include "model/param_provider.h"
#include "offload/aligned_buffer.h"
#include "offload/uring_file.h"
#include "zero/shard_map.h"

namespace tz {

class ParamGatherer {
 public:
  // shard(g): this rank's shard of group g's working params (dtype). Groups with persistent[g] are
  // never gathered (the engine keeps them whole). held_group is the group the model keeps acquired
  // through a whole pass (the embedding, tied to the LM head); it gets a slot of its own.
  ParamGatherer(Device& dev, Communicator& comm, const ShardMap& map, DType dtype,
                std::function<const void*(int)> shard, std::vector<bool> persistent, int held_group,
                std::size_t prefetch_elems, std::size_t max_live_elems);
  ~ParamGatherer();

  // ZeRO-Infinity: shards that live on NVMe are first read into a host staging buffer of the slot
  // (fetch starts the read of group g's shard into dst), then all-gathered from there; prefetching a
  // group starts both ahead of its use. shard_bytes: the largest shard's staging size.
  using Fetch = std::function<IoHandle(int g, void* dst)>;
  void set_fetch(Fetch fetch, std::size_t shard_bytes);

  CView acquire(int g, Pass pass);
  void release(int g, Pass pass);
  void progress();

  std::size_t slot_bytes() const { return slot_bytes_; }
  std::size_t staging_bytes() const { return staging_bytes_; }  // host staging of NVMe fetches
  // Seconds acquire spent blocked on NVMe reads of shards (the rest of their time was hidden).
  double fetch_wait_seconds() const { return fetch_wait_; }
  void reset_fetch_wait() { fetch_wait_ = 0; }
  std::vector<std::span<std::byte>> staging_regions() {
    std::vector<std::span<std::byte>> r;
    for (auto& s : slots_)
      if (!s.staging.empty()) r.emplace_back(s.staging.data(), s.staging.bytes());
    return r;
  }
  int small_slots() const { return int(slots_.size()) - 1; }

 private:
  struct Slot {
    Buffer<std::uint8_t> mem;
    std::size_t elems = 0;
    int group = -1;
    bool held = false;
    std::unique_ptr<Work> work;
    AlignedBuffer staging;  // NVMe-resident shards land here before the gather
    IoHandle fetch;
    bool fetching = false;
  };
  void launch_gather(Slot& slot);
  // Launches the gathers of fetched shards in the order their reads started, waiting for the reads.
  // Every rank must issue its collectives in the same order, so this runs only at points every rank
  // reaches in the same sequence (acquire), never when a read happens to finish: it launches every
  // pending gather whose read was started by an earlier acquire, and up to slot `until` if given.
  void launch_in_order(int until);
  int slot_of(int g) const;
  int free_slot_for(int g) const;
  void start_gather(int g, int slot);
  void prefetch_after(int pass, std::size_t pos);

  Device& dev_;
  Communicator& comm_;
  const ShardMap& map_;
  DType dtype_;
  std::function<const void*(int)> shard_;
  std::vector<bool> persistent_;
  std::size_t prefetch_elems_;
  int big_group_ = -1;         // the held group, in slot 0 (-1 if it is persistent)
  std::vector<Slot> slots_;    // [0]: the held group's slot; [1..]: slots for every other group
  std::vector<int> trace_[2];  // acquire order per pass kind
  bool traced_[2] = {false, false};
  std::size_t pos_[2] = {0, 0};
  std::size_t slot_bytes_ = 0, staging_bytes_ = 0;
  Fetch fetch_;
  struct Pending {
    int slot;
    std::size_t started_at;  // acquire count when its read started
  };
  std::deque<Pending> pending_;  // slots whose shard is being read, in the order the reads started
  std::size_t acquires_ = 0;
  double fetch_wait_ = 0;
};

}  // namespace tz
