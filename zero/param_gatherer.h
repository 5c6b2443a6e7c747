// Stage 3 parameter gathering: a sharded group's full working params are all-gathered from every
// rank's shard into a slot when the model acquires it, and the slot is freed on release. A shard that
// lives on the host tier is first copied up into this rank's part of the slot; one on NVMe is first
// read into pinned staging. The order in which the model acquires groups is recorded on the first pass
// of each kind, and later passes prefetch the next groups (up to stage3_prefetch_bucket_size elements,
// within stage3_max_live_parameters) while the current one computes.
#pragma once

#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "core/backend.h"
#include "core/buffer_plan.h"
#include "core/device.h"
#include "model/param_provider.h"
#include "zero/placed_array.h"
#include "zero/placement.h"
#include "zero/shard_map.h"

namespace tz {

struct GatherPlan {
  int held_group = -1;            // the group held through a whole pass (the embedding), if it is sharded
  std::size_t held_elems = 0;     // its slot
  std::size_t slot_elems = 0;     // each slot for the other sharded groups
  int slots = 0;                  // how many of those
  std::size_t staging_bytes = 0;  // per slot: pinned staging of an NVMe-resident shard (0: none)
  bool any() const { return held_elems + slot_elems > 0; }
};

GatherPlan plan_gathers(const ShardMap& map, const Placement& place, const ZeroOptions& zero);

class ParamGatherer {
 public:
  // params[g]: this rank's shard of group g's working params, which knows where it lives (device or host
  // memory, or an NVMe store it is read from: PlacedArray::fetch). The slots ("gathered parameters ...") and
  // NVMe staging come from `planned`.
  ParamGatherer(Device& dev, Stream& stream, Communicator& comm, const ShardMap& map, const Placement& place,
                const GatherPlan& plan, std::vector<const PlacedArray<std::uint8_t>*> params,
                std::size_t prefetch_elems, PlannedBuffers& planned);
  ~ParamGatherer();

  static std::vector<BufferSpec> buffers(const GatherPlan& plan, DType dtype);

  // Every group's acquire is traced (the prefetch order); a group that is not sharded returns {}.
  CView acquire(int g, Pass pass);
  void release(int g, Pass pass);

  // The NVMe fetch staging (to register with io_uring).
  std::vector<std::span<std::byte>> staging_regions() {
    std::vector<std::span<std::byte>> r;
    for (auto& s : slots_)
      if (!s.staging.empty())
        r.emplace_back(reinterpret_cast<std::byte*>(s.staging.data()), s.staging.bytes());
    return r;
  }
  // Seconds acquire spent blocked on NVMe reads of shards (the rest of their time was hidden).
  double fetch_wait_seconds() const { return fetch_wait_; }
  void reset_fetch_wait() { fetch_wait_ = 0; }

 private:
  // Members are destroyed in reverse order: the in-flight handles (fetch, work) before the memory they use.
  struct Slot {
    Buffer<std::uint8_t> mem;
    Buffer<std::uint8_t> staging;  // NVMe-resident shards land here before going up
    int group = -1;
    bool held = false;
    std::unique_ptr<Work> work;
    IoHandle fetch;
    bool fetching = false;
    // Recorded on the compute stream at release: the next copy into the slot, on the upload stream,
    // waits for the kernels that read it.
    std::unique_ptr<Event> free;
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
  void trace(int pass, int g);

  Device& dev_;
  Stream& stream_;
  Communicator& comm_;
  const ShardMap& map_;
  const Placement& place_;
  std::vector<const PlacedArray<std::uint8_t>*> params_;
  std::size_t prefetch_elems_;
  int held_group_ = -1;
  std::vector<Slot> slots_;    // [0]: the held group's slot; [1..]: slots for every other group
  std::vector<int> trace_[2];  // acquire order per pass kind
  bool traced_[2] = {false, false};
  std::size_t pos_[2] = {0, 0};
  std::unique_ptr<Event> copied_;
  // Host and NVMe shards go up on a stream of their own, so the upload of the next group runs while
  // the compute stream works on this one.
  std::unique_ptr<Stream> up_;
  struct Pending {
    int slot;
    std::size_t started_at;  // acquire count when its read started
  };
  std::deque<Pending> pending_;  // slots whose shard is being read, in the order the reads started
  std::size_t acquires_ = 0;
  double fetch_wait_ = 0;
};

}  // namespace tz
