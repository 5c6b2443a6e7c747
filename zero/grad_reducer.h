// Bucketed gradient reduction. Backward hands over each group's full (padded) gradient in a fixed
// order; it is copied into the bucket that is filling, and a bucket is reduced with one collective as
// soon as its last group arrives, while backward goes on: all-reduce (replicated optimizer states) or
// reduce-scatter (sharded). The buckets are planned once from that order, so every rank block of a
// reduce-scatter bucket sits at its final stride and nothing is compacted at launch. Two bucket
// buffers alternate: one fills while the other's collective is in flight.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "core/buffer_plan.h"
#include "core/device.h"
#include "zero/shard_map.h"

namespace tz {

// The launches, planned from the order groups arrive in (a pure function of the layout and settings).
struct BucketPlan {
  bool reduce_scatter = false;
  std::size_t capacity = 0;         // elements of each of the two bucket buffers
  std::vector<int> order;           // the groups in the order they arrive
  std::vector<int> bucket_of;       // per group: its launch
  std::vector<std::size_t> offset;  // per group: its offset in its launch's rank block (or bucket)
  std::vector<std::size_t> stride;  // per launch: elements per rank block (reduce-scatter) or in all
  int launches() const { return int(stride.size()); }
};

// bucket_elems: reduce_bucket_size (raised to the largest group; a bucket never holds more).
BucketPlan plan_buckets(const ShardMap& map, bool reduce_scatter, std::size_t bucket_elems,
                        std::vector<int> order);

class GradReducer {
 public:
  // Where a group's reduced gradient goes and how: copied or added into device memory, or added into
  // host memory (the host-tier gradient shard of an offloaded optimizer) through pinned staging.
  enum class Deliver { copy, add };
  struct Destination {
    float* ptr = nullptr;  // its padded length (all-reduce) or its shard (reduce-scatter)
    Deliver how = Deliver::copy;
    bool on_host = false;
  };
  // Buffers "gradient bucket 0/1" and, if any destination is on the host, "gradient delivery staging"
  // come from `planned`. overlap: DeepSpeed's overlap_comm (false: each bucket is reduced and
  // delivered as soon as it is launched, so no collective runs while backward computes).
  GradReducer(Device& dev, Stream& stream, Communicator& comm, const ShardMap& map, BucketPlan plan,
              std::vector<Destination> dest, PlannedBuffers& planned, bool overlap);
  ~GradReducer();

  static std::vector<BufferSpec> buffers(const ShardMap& map, const BucketPlan& plan, bool host_destination);

  // Copies group g's gradient (padded length, fp32, device) into its bucket; the caller may reuse
  // `grad` once the stream reaches this point. Launches the bucket when g is its last group.
  void push(int g, const float* grad);
  // Delivers every launched bucket: each destination then holds its result. Every group must have
  // arrived since the last flush (or none).
  void flush();
  // Called with each group as soon as its destination holds the reduced gradient (host destinations:
  // in host memory already; device ones: in stream order).
  void on_delivered(std::function<void(int)> fn) { delivered_ = std::move(fn); }

 private:
  struct Slot;
  void launch(Slot& s);
  void deliver(Slot& s);
  void deliver_to_host(const Destination& d, const float* src, std::size_t n);

  Device& dev_;
  Stream& stream_;
  Communicator& comm_;
  const ShardMap& map_;
  BucketPlan plan_;
  std::vector<Destination> dest_;
  bool overlap_;
  std::vector<std::unique_ptr<Slot>> slots_;
  Buffer<float> host_staging_;
  std::unique_ptr<Event> copied_;
  std::unique_ptr<Stream> down_;  // device-to-host copies of shards for the host tier
  std::size_t next_ = 0;  // position in plan_.order of the group expected next
  std::function<void(int)> delivered_;
};

}  // namespace tz
