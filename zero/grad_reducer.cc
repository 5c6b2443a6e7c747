// GradReducer: rank-major staging for reduce-scatter, group-major for all-reduce, double-buffered.
#include "zero/grad_reducer.h"

#include <algorithm>
#include <cstring>

#include "core/backend.h"
#include "core/error.h"

namespace tz {

struct GradReducer::Bucket {
  Buffer<float> staging;
  std::vector<int> groups;
  std::vector<std::size_t> offsets;  // per group: offset in the bucket's shard (reduce_scatter) or whole (all_reduce)
  std::size_t used = 0;              // shard elements (reduce_scatter) or total elements (all_reduce)
  std::unique_ptr<Work> work;
};

GradReducer::GradReducer(Device& dev, Communicator& comm, const ShardMap& map, ReduceMode mode,
                         std::size_t bucket_elems, std::function<float*(int)> dest, Deliver deliver, bool overlap)
    : dev_(dev), comm_(comm), map_(map), mode_(mode), dest_(std::move(dest)), deliver_(deliver), overlap_(overlap) {
  std::size_t largest = 0;
  for (int g = 0; g < map.groups(); ++g) largest = std::max(largest, map.group(g).padded);
  std::size_t unit = kShardAlign * std::size_t(map.world());
  capacity_ = std::max(largest, (bucket_elems + unit - 1) / unit * unit);
  capacity_ = std::min(capacity_, std::max(largest, map.total_padded()));
  for (int i = 0; i < 2; ++i) {
    auto b = std::make_unique<Bucket>();
    b->staging = Buffer<float>(dev, capacity_, "gradient bucket " + std::to_string(i));
    buckets_.push_back(std::move(b));
  }
}

GradReducer::~GradReducer() {
  for (auto& b : buckets_)
    if (b->work) {
      try {
        b->work->wait();
      } catch (const std::exception& e) {
        log_line(std::string("gradient bucket still in flight at shutdown: ") + e.what());
      }
    }
}

void GradReducer::push(int g, const float* grad) {
  const GroupShards& gs = map_.group(g);
  const std::size_t N = std::size_t(map_.world());
  Bucket* b = buckets_[filling_].get();
  std::size_t need = mode_ == ReduceMode::reduce_scatter ? gs.shard_count : gs.padded;
  std::size_t room = mode_ == ReduceMode::reduce_scatter ? capacity_ / N : capacity_;
  if (b->used + need > room) {
    launch(*b);
    if (!overlap_) finish(*b);
    filling_ ^= 1;
    b = buckets_[filling_].get();
    if (b->work) finish(*b);  // the other bucket must be delivered before it is refilled
  }
  b->groups.push_back(g);
  b->offsets.push_back(b->used);
  if (mode_ == ReduceMode::all_reduce) {
    std::memcpy(b->staging.data() + b->used, grad, gs.padded * sizeof(float));
  } else {
    // Rank-major: rank k's part of every group in this bucket lies in block k (stride room, compacted
    // at launch), so one reduce-scatter hands each rank its shard of every group.
    for (std::size_t k = 0; k < N; ++k)
      std::memcpy(b->staging.data() + k * room + b->used, grad + k * gs.shard_count, gs.shard_count * sizeof(float));
  }
  b->used += need;
}

void GradReducer::launch(Bucket& b) {
  if (b.groups.empty()) return;
  const std::size_t N = std::size_t(map_.world());
  if (mode_ == ReduceMode::all_reduce) {
    b.work = comm_.all_reduce(b.staging.data(), b.used, DType::f32);
    return;
  }
  std::size_t room = capacity_ / N;
  if (b.used < room)  // compact the N blocks to a stride of `used` (memmove: they move down, in order)
    for (std::size_t k = 1; k < N; ++k)
      std::memmove(b.staging.data() + k * b.used, b.staging.data() + k * room, b.used * sizeof(float));
  b.work = comm_.reduce_scatter(b.staging.data(), b.staging.data(), b.used, DType::f32);
}

void GradReducer::finish(Bucket& b) {
  if (b.work) {
    b.work->wait();
    b.work.reset();
  }
  Backend& be = dev_.backend();
  for (std::size_t i = 0; i < b.groups.size(); ++i) {
    int g = b.groups[i];
    const GroupShards& gs = map_.group(g);
    std::size_t n = mode_ == ReduceMode::reduce_scatter ? gs.shard_count : gs.padded;
    const float* src = b.staging.data() + b.offsets[i];
    float* dst = dest_(g);
    if (deliver_ == Deliver::copy)
      std::memcpy(dst, src, n * sizeof(float));
    else
      be.axpy(dst, 1.0f, src, n);
  }
  b.groups.clear();
  b.offsets.clear();
  b.used = 0;
}

void GradReducer::progress() {
  for (auto& b : buckets_)
    if (b->work && b->work->test()) finish(*b);
}

void GradReducer::flush() {
  Bucket& cur = *buckets_[filling_];
  launch(cur);
  // Deliver the older bucket first so results land in launch order.
  Bucket& other = *buckets_[filling_ ^ 1];
  if (other.work || !other.groups.empty()) finish(other);
  if (cur.work || !cur.groups.empty()) finish(cur);
  filling_ = 0;
}

}  // namespace tz
