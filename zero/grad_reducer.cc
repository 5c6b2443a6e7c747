// GradReducer: the bucket plan, rank-major staging at planned strides, and delivery.
#include "zero/grad_reducer.h"

#include <algorithm>

#include "core/backend.h"
#include "core/error.h"
#include "core/host_ops.h"

namespace tz {

BucketPlan plan_buckets(const ShardMap& map, bool reduce_scatter, std::size_t bucket_elems,
                        std::vector<int> order) {
  BucketPlan p;
  p.reduce_scatter = reduce_scatter;
  const std::size_t N = std::size_t(map.world());
  std::size_t largest = 0;
  for (int g : order) largest = std::max(largest, map.group(g).padded);
  // Room per launch, in the unit staged per group: its shard (rank-major) or its whole padded length.
  const std::size_t room = std::max(largest, bucket_elems) / (reduce_scatter ? N : 1);
  p.bucket_of.assign(map.groups(), -1);
  p.offset.assign(map.groups(), 0);
  for (int g : order) {
    const std::size_t need = reduce_scatter ? map.group(g).shard_count : map.group(g).padded;
    if (p.stride.empty() || p.stride.back() + need > room) p.stride.push_back(0);
    p.bucket_of[g] = p.launches() - 1;
    p.offset[g] = p.stride.back();
    p.stride.back() += need;
  }
  for (std::size_t s : p.stride) p.capacity = std::max(p.capacity, s * (reduce_scatter ? N : 1));
  p.order = std::move(order);
  return p;
}

struct GradReducer::Slot {
  Buffer<float> staging;
  int launch = -1;  // the planned launch staged in this buffer (-1: free)
  std::unique_ptr<Work> work;
  int pending = 0;  // groups of the launch not yet copied in
};

std::vector<BufferSpec> GradReducer::buffers(const ShardMap& map, const BucketPlan& plan,
                                             bool host_destination) {
  std::vector<BufferSpec> v;
  if (plan.launches() == 0) return v;
  for (int i = 0; i < std::min(2, plan.launches()); ++i)
    v.push_back(
        {"gradient bucket " + std::to_string(i), "gradient buckets", MemoryKind::device, plan.capacity * 4});
  if (host_destination) {
    std::size_t largest = 0;
    for (int g : plan.order)
      largest = std::max(largest, plan.reduce_scatter ? map.group(g).shard_count : map.group(g).padded);
    v.push_back({"gradient delivery staging", "host staging", MemoryKind::pinned_host, largest * 4});
  }
  return v;
}

GradReducer::GradReducer(Device& dev, Stream& stream, Communicator& comm, const ShardMap& map,
                         BucketPlan plan, std::vector<Destination> dest, PlannedBuffers& planned,
                         bool overlap)
    : dev_(dev),
      stream_(stream),
      comm_(comm),
      map_(map),
      plan_(std::move(plan)),
      dest_(std::move(dest)),
      overlap_(overlap),
      copied_(dev.create_event()) {
  for (int i = 0; i < std::min(2, plan_.launches()); ++i) {
    slots_.push_back(std::make_unique<Slot>());
    slots_.back()->staging = planned.take<float>("gradient bucket " + std::to_string(i));
  }
  bool host = false;
  for (const Destination& d : dest_) host |= d.on_host;
  if (host) {
    host_staging_ = planned.take<float>("gradient delivery staging");
    down_ = dev.create_stream();
  }
}

// A bucket still in flight is waited on by its Work's destructor (silently, when the communicator has
// failed), before the bucket's memory is freed: Slot declares the staging before the Work.
GradReducer::~GradReducer() = default;

void GradReducer::push(int g, const float* grad) {
  TZ_CHECK(next_ < plan_.order.size() && plan_.order[next_] == g, "gradient of group ", g,
           " arrived out of the planned order (expected group ",
           next_ < plan_.order.size() ? plan_.order[next_] : -1, "); the model's backward order changed");
  ++next_;
  const int l = plan_.bucket_of[g];
  Slot& s = *slots_[l % slots_.size()];
  if (s.launch != l) {
    if (s.launch >= 0) deliver(s);  // the buffer's previous launch must be delivered before refilling
    s.launch = l;
    s.pending = 0;
    for (int h : plan_.order) s.pending += plan_.bucket_of[h] == l ? 1 : 0;
  }
  Backend& be = dev_.backend();
  const GroupShards& gs = map_.group(g);
  if (!plan_.reduce_scatter) {
    be.copy_async(stream_, s.staging.data() + plan_.offset[g], grad, gs.padded * sizeof(float));
  } else {
    // Rank-major: rank k's part of every group of the launch lies in block k (stride: the launch's
    // shard elements), so one reduce-scatter hands each rank its shard of every group.
    const std::size_t stride = plan_.stride[l];
    for (int k = 0; k < map_.world(); ++k)
      be.copy_async(stream_, s.staging.data() + k * stride + plan_.offset[g], grad + k * gs.shard_count,
                    gs.shard_count * sizeof(float));
  }
  if (--s.pending == 0) {
    launch(s);
    if (!overlap_) deliver(s);
  }
}

void GradReducer::launch(Slot& s) {
  const std::size_t stride = plan_.stride[s.launch];
  // The collective reads what the stream copied in: a communicator that follows the producer stream
  // (NCCL) waits for this point on the device; otherwise the host waits (the CPU stream has already run
  // the copies).
  if (!comm_.follows_producer_stream()) {
    copied_->record(stream_);
    copied_->synchronize();
  }
  if (plan_.reduce_scatter) {
    float* mine = s.staging.data() + std::size_t(map_.rank()) * stride;  // NCCL's in-place convention
    s.work = comm_.reduce_scatter(s.staging.data(), mine, stride, DType::f32);
  } else {
    s.work = comm_.all_reduce(s.staging.data(), stride, DType::f32);
  }
}

void GradReducer::deliver(Slot& s) {
  if (s.launch < 0) return;
  TZ_CHECK(s.pending == 0, "a gradient bucket was delivered before all of its groups arrived");
  // Shards for the host go down on a stream of their own as soon as the collective is done, not behind
  // the backward kernels enqueued since; device destinations are filled on the compute stream.
  bool to_host = false, to_device = false;
  for (int g : plan_.order)
    if (plan_.bucket_of[g] == s.launch) (dest_[g].on_host ? to_host : to_device) = true;
  if (to_device) s.work->wait(stream_);
  if (to_host) s.work->wait(*down_);
  s.work.reset();
  Backend& be = dev_.backend();
  const std::size_t base = plan_.reduce_scatter ? std::size_t(map_.rank()) * plan_.stride[s.launch] : 0;
  for (int g : plan_.order) {
    if (plan_.bucket_of[g] != s.launch) continue;
    const std::size_t n = plan_.reduce_scatter ? map_.group(g).shard_count : map_.group(g).padded;
    const float* src = s.staging.data() + base + plan_.offset[g];
    const Destination& d = dest_[g];
    if (d.on_host)
      deliver_to_host(d, src, n);
    else if (d.how == Deliver::copy)
      be.copy_async(stream_, d.ptr, src, n * sizeof(float));
    else
      be.axpy(stream_, d.ptr, 1.0f, src, n);
    if (delivered_) delivered_(g);
  }
  s.launch = -1;
}

void GradReducer::deliver_to_host(const Destination& d, const float* src, std::size_t n) {
  dev_.backend().copy_async(*down_, host_staging_.data(), src, n * sizeof(float));
  copied_->record(*down_);
  copied_->synchronize();  // the host adds what the copy brought down
  if (d.how == Deliver::copy)
    host_copy(d.ptr, host_staging_.data(), n);
  else
    host_add(d.ptr, host_staging_.data(), n);
}

void GradReducer::flush() {
  // Deliver in launch order: the older buffer first.
  std::vector<Slot*> live;
  for (auto& s : slots_)
    if (s->launch >= 0) live.push_back(s.get());
  std::sort(live.begin(), live.end(), [](Slot* a, Slot* b) { return a->launch < b->launch; });
  for (Slot* s : live) deliver(*s);
  // Nothing since the last flush is fine (the step flushes after the last micro-step did); part of
  // the groups is not.
  TZ_CHECK(next_ == 0 || next_ == plan_.order.size(), "gradients were reduced for ", next_, " of ",
           plan_.order.size(), " groups before the step; backward must hand over every group");
  next_ = 0;
}

}  // namespace tz
