// Bucketed gradient reduction. Full (padded) group gradients are copied into a staging bucket as
// backward produces them; a full bucket is reduced with one collective while backward goes on:
// all-reduce (stage 0) or reduce-scatter (stages 1-3), after which each group's result is copied
// or added to its destination. Two buckets alternate, so one fills while the other is in flight.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "core/device.h"
#include "zero/shard_map.h"

namespace tz {

enum class ReduceMode { all_reduce, reduce_scatter };
enum class Deliver { copy, add };

class GradReducer {
 public:
  // dest(g): where group g's result goes: its padded length for all_reduce, its shard for
  // reduce_scatter. bucket_elems is the reduce_bucket_size (raised to the largest group).
  // With overlap off (DeepSpeed's overlap_comm: false) each bucket is reduced and delivered as soon as
  // it is launched, so no collective runs while backward computes.
  GradReducer(Device& dev, Communicator& comm, const ShardMap& map, ReduceMode mode, std::size_t bucket_elems,
              std::function<float*(int)> dest, Deliver deliver, bool overlap = true);
  ~GradReducer();

  // Adds group g's gradient (padded length, fp32) to the filling bucket; the caller may reuse `grad`
  // as soon as this returns. Launches the bucket when the group does not fit.
  void push(int g, const float* grad);
  // Launches the partial bucket and waits for all; every destination then holds its result.
  void flush();
  // Advances in-flight collectives and delivers finished ones (call between blocks).
  void progress();

  std::size_t bucket_capacity() const { return capacity_; }
  std::size_t staging_bytes() const { return 2 * capacity_ * sizeof(float); }

 private:
  struct Bucket;
  void launch(Bucket& b);
  void finish(Bucket& b);

  Device& dev_;
  Communicator& comm_;
  const ShardMap& map_;
  ReduceMode mode_;
  std::function<float*(int)> dest_;
  Deliver deliver_;
  bool overlap_;
  std::size_t capacity_ = 0;
  std::vector<std::unique_ptr<Bucket>> buckets_;
  int filling_ = 0;
};

}  // namespace tz
