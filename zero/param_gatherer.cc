// ParamGatherer: slots, gathers from device, host or NVMe shards, and trace-driven prefetch.
#include "zero/param_gatherer.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "core/host_memory.h"

namespace tz {

GatherPlan plan_gathers(const ShardMap& map, const Placement& place, const ZeroOptions& zero) {
  GatherPlan p;
  const int held = place.embedding_group;
  std::size_t others = 0, largest_shard = 0;
  bool nvme = false;
  for (int g = 0; g < map.groups(); ++g) {
    const GroupPlacement& gp = place.groups[g];
    if (!gp.params_sharded) continue;
    nvme |= in_file(gp.params_home);
    largest_shard = std::max(largest_shard, map.group(g).shard_count);
    if (g == held) {
      p.held_group = g, p.held_elems = map.group(g).padded;  // held through the pass: a slot of its own
    } else {
      p.slot_elems = std::max(p.slot_elems, map.group(g).padded);
      ++others;
    }
  }
  if (!p.any()) return p;
  const std::size_t big = p.held_elems, small = p.slot_elems;
  // One slot for the group in use plus one per prefetched group that fits both limits; more slots
  // than groups to put in them would only waste memory. As in DeepSpeed, stage3_max_live_parameters
  // limits only what is gathered ahead: below the embedding plus one group (0 included) nothing is
  // prefetched, and the group in use is still gathered.
  if (small) {
    const std::size_t depth = zero.prefetch_bucket_size / small,
                      live_room = zero.max_live_parameters > big ? (zero.max_live_parameters - big) / small : 0;
    p.slots = int(std::max<std::size_t>(1, std::min<std::size_t>({1 + depth, live_room, others})));
  }
  if (nvme) p.staging_bytes = round_up(largest_shard * dtype_size(place.working), kDirectIoAlign);
  return p;
}

std::vector<BufferSpec> ParamGatherer::buffers(const GatherPlan& plan, DType dtype) {
  std::vector<BufferSpec> v;
  const std::size_t es = dtype_size(dtype);
  auto slot = [&](const std::string& name) {
    if (plan.staging_bytes)
      v.push_back({"parameter fetch staging (" + name + ")", "host staging", MemoryKind::pinned_host,
                   plan.staging_bytes});
  };
  if (plan.held_elems) {
    v.push_back(
        {"gathered parameters (embedding)", "gathered parameters", MemoryKind::device, plan.held_elems * es});
    slot("embedding");
  }
  for (int i = 1; i <= plan.slots; ++i) {
    v.push_back({"gathered parameters slot " + std::to_string(i), "gathered parameters", MemoryKind::device,
                 plan.slot_elems * es});
    slot("slot " + std::to_string(i));
  }
  return v;
}

ParamGatherer::ParamGatherer(Device& dev, Stream& stream, Communicator& comm, const ShardMap& map,
                             const Placement& place, const GatherPlan& plan,
                             std::vector<const PlacedArray<std::uint8_t>*> params, std::size_t prefetch_elems,
                             PlannedBuffers& planned)
    : dev_(dev),
      stream_(stream),
      comm_(comm),
      map_(map),
      place_(place),
      params_(std::move(params)),
      prefetch_elems_(prefetch_elems),
      held_group_(plan.held_group),
      copied_(dev.create_event()),
      up_(dev.create_stream()) {
  slots_.resize(1 + plan.slots);
  for (Slot& s : slots_) s.free = dev.create_event();
  auto take = [&](Slot& s, const std::string& name, const std::string& staging) {
    s.mem = planned.take<std::uint8_t>(name);
    if (plan.staging_bytes)
      s.staging = planned.take<std::uint8_t>("parameter fetch staging (" + staging + ")");
  };
  if (plan.held_elems) take(slots_[0], "gathered parameters (embedding)", "embedding");
  for (int i = 1; i <= plan.slots; ++i)
    take(slots_[i], "gathered parameters slot " + std::to_string(i), "slot " + std::to_string(i));
}

// A gather or read still in flight is waited on by its handle's destructor (a Work stays silent when
// the communicator has failed): Slot declares the memory they use before the handles.
ParamGatherer::~ParamGatherer() = default;

int ParamGatherer::slot_of(int g) const {
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].group == g) return int(i);
  return -1;
}

int ParamGatherer::free_slot_for(int g) const {
  if (g == held_group_) return slots_[0].group < 0 ? 0 : -1;
  for (std::size_t i = 1; i < slots_.size(); ++i)
    if (slots_[i].group < 0) return int(i);
  return -1;
}

void ParamGatherer::launch_gather(Slot& slot) {
  const int g = slot.group;
  const std::size_t count = map_.group(g).shard_count, bytes = count * dtype_size(place_.working);
  std::uint8_t* mine = slot.mem.data() + std::size_t(map_.rank()) * bytes;
  // A device shard is gathered straight from where it lives; a host or NVMe one is first copied up
  // into this rank's part of the slot and gathered in place.
  const PlacedArray<std::uint8_t>& shard = *params_[g];
  if (shard.on_device()) {
    slot.work = comm_.all_gather(shard.data(), slot.mem.data(), count, place_.working);
    return;
  }
  const void* src = shard.host_in(slot.staging.data());
  slot.free->wait(*up_);  // the kernels that read the slot's previous group are done with it
  dev_.backend().copy_async(*up_, mine, src, bytes);
  copied_->record(*up_);
  copied_->synchronize();  // the collective reads what the copy brought up (and the staging is free again)
  slot.work = comm_.all_gather(mine, slot.mem.data(), count, place_.working);
}

void ParamGatherer::start_gather(int g, int s) {
  Slot& slot = slots_[s];
  slot.group = g;
  if (params_[g]->in_file()) {  // staged by its store first
    slot.fetch = params_[g]->fetch(slot.staging.data());
    slot.fetching = true;
    pending_.push_back({s, acquires_});
    return;
  }
  launch_gather(slot);
}

void ParamGatherer::launch_in_order(int until) {
  bool reached = until < 0;
  while (!pending_.empty()) {
    auto [s, started] = pending_.front();
    if (reached && started >= acquires_) return;  // started by this acquire: its turn comes at the next
    Slot& slot = slots_[s];
    auto t0 = std::chrono::steady_clock::now();
    slot.fetch.wait();
    fetch_wait_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    slot.fetching = false;
    launch_gather(slot);
    pending_.pop_front();
    if (s == until) reached = true;
  }
}

void ParamGatherer::prefetch_after(int pass, std::size_t pos) {
  if (!traced_[pass] || prefetch_elems_ == 0) return;
  std::size_t ahead = 0;
  const auto& tr = trace_[pass];
  for (std::size_t i = pos + 1; i < tr.size(); ++i) {
    const int h = tr[i];
    if (!place_.groups[h].params_sharded) continue;
    ahead += map_.group(h).padded;
    if (ahead > prefetch_elems_) break;
    if (slot_of(h) >= 0) continue;
    const int s = free_slot_for(h);
    if (s < 0) break;  // no free slot: the order is sequential, so stop at the first that does not fit
    start_gather(h, s);
  }
}

void ParamGatherer::trace(int p, int g) {
  auto& tr = trace_[p];
  if (!traced_[p]) {
    if (!tr.empty() && tr.front() == g)
      traced_[p] = true;  // the pass has started again: the trace is complete
    else
      tr.push_back(g);
  }
  if (!traced_[p]) return;
  if (tr.front() == g)
    pos_[p] = 0;
  else if (pos_[p] + 1 < tr.size() && tr[pos_[p] + 1] == g)
    ++pos_[p];
}

CView ParamGatherer::acquire(int g, Pass pass) {
  const int p = pass == Pass::forward ? 0 : 1;
  trace(p, g);
  if (!place_.groups[g].params_sharded) return {};  // whole on the device: traced, never gathered
  int s = slot_of(g);
  // The gathers this acquire starts (its group's, the prefetches', those whose NVMe reads are done) are
  // launched as one collective group, before anything waits on them.
  CollectiveGroup group(comm_);
  if (s < 0) {
    s = free_slot_for(g);
    TZ_CHECK(s >= 0, "stage 3: no free slot to gather group ", g,
             " (the model holds more groups at once than planned); this is a bug, please report it");
    start_gather(g, s);
  }
  prefetch_after(p, pos_[p]);
  Slot& slot = slots_[s];
  if (slot.fetching) launch_in_order(s);
  launch_in_order(-1);  // gathers of shards whose reads earlier acquires started
  group.end();
  ++acquires_;
  if (slot.work) {
    slot.work->wait(stream_);  // the model's next kernel on the stream reads the gathered group
    slot.work.reset();
  }
  slot.held = true;
  return {slot.mem.data(), place_.working};
}

void ParamGatherer::release(int g, Pass) {
  if (!place_.groups[g].params_sharded) return;
  const int s = slot_of(g);
  TZ_CHECK(s >= 0 && slots_[s].held, "stage 3: release of group ", g, " that is not gathered");
  // The slot is free for the next gather once the kernels enqueued so far have read it: a copy into it
  // waits for this event; a collective into it waits for the compute stream (the producer stream).
  slots_[s].free->record(stream_);
  slots_[s].held = false;
  slots_[s].group = -1;
}

}  // namespace tz
