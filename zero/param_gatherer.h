// Stage 3 parameter gathering: a group's full working params are all-gathered from every rank's
// shard into a slot when the model acquires it, and the slot is freed on release. The order in which
// the model acquires groups is recorded on the first pass of each kind, and later passes prefetch the
// next groups (up to stage3_prefetch_bucket_size elements, within stage3_max_live_parameters) while
// the current one computes.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "core/backend.h"
#include "core/device.h"
#include "model/param_provider.h"
#include "zero/shard_map.h"

namespace tz {

class ParamGatherer {
 public:
  // shard(g): this rank's shard of group g's working params (dtype). Groups with persistent[g] are
  // never gathered (the engine keeps them whole). held_group is the group the model keeps acquired
  // through a whole pass (the embedding, tied to the LM head); it gets a slot of its own.
  ParamGatherer(Device& dev, Communicator& comm, const ShardMap& map, DType dtype, std::function<const void*(int)> shard,
                std::vector<bool> persistent, int held_group, std::size_t prefetch_elems, std::size_t max_live_elems);
  ~ParamGatherer();

  CView acquire(int g, Pass pass);
  void release(int g, Pass pass);
  void progress();

  std::size_t slot_bytes() const { return slot_bytes_; }
  int small_slots() const { return int(slots_.size()) - 1; }

 private:
  struct Slot {
    Buffer<std::uint8_t> mem;
    std::size_t elems = 0;
    int group = -1;
    bool held = false;
    std::unique_ptr<Work> work;
  };
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
  int big_group_ = -1;                  // the held group, in slot 0 (-1 if it is persistent)
  std::vector<Slot> slots_;             // [0]: the held group's slot; [1..]: slots for every other group
  std::vector<int> trace_[2];           // acquire order per pass kind
  bool traced_[2] = {false, false};
  std::size_t pos_[2] = {0, 0};
  std::size_t slot_bytes_ = 0;
};

}  // namespace tz
