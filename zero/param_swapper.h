// NVMe-resident stage-3 parameter shards (ZeRO-Infinity), the partner of the optimizer swapper: their
// extents in the store, the read of a shard into pinned staging before it is gathered, and the
// write-back of updated shards through a ring of pinned buffers, asynchronous so the write of one
// sub-group overlaps the update of the next (DeepSpeed's partitioned_param_swapper).
#pragma once

#include <cstdint>
#include <vector>

#include "core/buffer_plan.h"
#include "offload/nvme_store.h"
#include "zero/optimizer_swapper.h"
#include "zero/placed_array.h"
#include "zero/placement.h"

namespace tz {

struct ParamSwapPlan {
  std::vector<std::int64_t> offset;   // per group: its shard's store offset, or -1 when not on NVMe
  std::vector<std::size_t> count;     // per group: shard elements
  std::uint64_t base = 0, bytes = 0;  // the store range of all shards
  std::size_t slot_bytes = 0;         // each write-back buffer: the largest sub-group's bytes, page-rounded
  int slots = 0;
  bool any() const { return slots > 0; }
};

// base: where the shards start in the store; chunk: elements per optimizer sub-group (a multiple of
// block / 2, so each sub-group's extent starts on a block boundary in 2-byte and 4-byte shards).
ParamSwapPlan plan_param_swap(const ShardMap& map, const Placement& place, std::uint64_t base,
                              std::size_t block, std::size_t chunk);

// The store of the working params' shards on NVMe (PlacedArray::held_by: the optimizer step, the gatherer
// and the engine's initialisation reach it through the params' array).
class ParamSwapper : public ArrayStore {
 public:
  ParamSwapper(NvmeStore& store, ParamSwapPlan plan, DType dtype, PlannedBuffers& planned);
  ~ParamSwapper() override;

  static std::vector<BufferSpec> buffers(const ParamSwapPlan& plan);

  // Writes group g's initial shard (fp32 values, cast to the working dtype; blocking, before step 1).
  void initialize(int g, const float* values) override;
  // Starts reading group g's whole shard into dst (pinned, at least shard bytes page-rounded).
  IoHandle fetch(int g, void* dst) override;
  std::size_t fetch_bytes(int g) const;

  // The write-back ring: a pinned buffer for n elements of a shard (waits, if needed, for the write
  // that last used it), then the asynchronous write of elements [begin, begin + n) of g's shard.
  void* writeback_buffer() override;
  void commit(int g, std::size_t begin, std::size_t n) override;
  // Waits for every write-back (end of the step).
  void drain();

  SwapStats& stats() { return stats_; }
  std::vector<std::span<std::byte>> regions();

 private:
  NvmeStore& store_;
  ParamSwapPlan plan_;
  DType dtype_;
  std::vector<Buffer<std::uint8_t>> ring_;
  std::vector<IoHandle> writes_;
  std::size_t next_ = 0;
  SwapStats stats_;
};

}  // namespace tz
