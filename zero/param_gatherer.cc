// ParamGatherer: slots, gathers and trace-driven prefetch.
#include "zero/param_gatherer.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"

namespace tz {

ParamGatherer::ParamGatherer(Device& dev, Communicator& comm, const ShardMap& map, DType dtype,
                             std::function<const void*(int)> shard, std::vector<bool> persistent,
                             int held_group, std::size_t prefetch_elems, std::size_t max_live_elems)
    : dev_(dev),
      comm_(comm),
      map_(map),
      dtype_(dtype),
      shard_(std::move(shard)),
      persistent_(std::move(persistent)),
      prefetch_elems_(prefetch_elems) {
  std::size_t big = 0, small = 0;
  if (!persistent_[held_group]) big_group_ = held_group, big = map.group(held_group).padded;
  for (int g = 0; g < map.groups(); ++g)
    if (!persistent_[g] && g != big_group_) small = std::max(small, map.group(g).padded);
  if (big == 0 && small == 0) return;  // everything persistent: nothing to gather
  TZ_CHECK(max_live_elems >= big + small, "stage3_max_live_parameters (", max_live_elems,
           ") is below what one forward step keeps gathered: the embedding group (", big,
           " elements, held for the whole pass, tied to the LM head) plus the largest other group (", small,
           "); raise --max-live-parameters");
  // One slot for the group in use plus one per prefetched group that fits both limits.
  std::size_t depth = small ? prefetch_elems / small : 0;
  std::size_t live_room = small ? (max_live_elems - big) / small : 1;
  std::size_t others = 0;  // more slots than groups to put in them would only waste memory
  for (int g = 0; g < map.groups(); ++g) others += (!persistent_[g] && g != big_group_) ? 1 : 0;
  std::size_t nsmall =
      small ? std::max<std::size_t>(1, std::min<std::size_t>({1 + depth, live_room, others})) : 0;
  std::size_t es = dtype_size(dtype);
  slots_.resize(1 + nsmall);
  slots_[0].elems = big;
  if (big) slots_[0].mem = Buffer<std::uint8_t>(dev, big * es, "gathered parameters (embedding)");
  for (std::size_t i = 1; i <= nsmall; ++i) {
    slots_[i].elems = small;
    slots_[i].mem = Buffer<std::uint8_t>(dev, small * es, "gathered parameters slot " + std::to_string(i));
  }
  slot_bytes_ = (big + nsmall * small) * es;
}

ParamGatherer::~ParamGatherer() {
  for (auto& s : slots_) {
    if (s.fetching) {
      try {
        s.fetch.wait();
      } catch (const std::exception& e) {
        log_line(std::string("parameter fetch still in flight at shutdown: ") + e.what());
      }
    }
    if (s.work) {
      try {
        s.work->wait();
      } catch (const std::exception& e) {
        log_line(std::string("parameter gather still in flight at shutdown: ") + e.what());
      }
    }
  }
}

int ParamGatherer::slot_of(int g) const {
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].group == g) return int(i);
  return -1;
}

int ParamGatherer::free_slot_for(int g) const {
  if (g == big_group_) return slots_[0].group < 0 ? 0 : -1;
  for (std::size_t i = 1; i < slots_.size(); ++i)
    if (slots_[i].group < 0) return int(i);
  return -1;
}

void ParamGatherer::set_fetch(Fetch fetch, std::size_t shard_bytes) {
  fetch_ = std::move(fetch);
  for (auto& s : slots_) s.staging = AlignedBuffer(shard_bytes);
  staging_bytes_ = slots_.size() * round_up(shard_bytes, kDirectIoAlign);
}

void ParamGatherer::launch_gather(Slot& slot) {
  const Shard sh = map_.shard(slot.group);
  const void* src = fetch_ ? static_cast<const void*>(slot.staging.data()) : shard_(slot.group);
  slot.work = comm_.all_gather(src, slot.mem.data(), sh.count, dtype_);
}

void ParamGatherer::start_gather(int g, int s) {
  Slot& slot = slots_[s];
  slot.group = g;
  if (fetch_) {
    slot.fetch = fetch_(g, slot.staging.data());
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
    int h = tr[i];
    if (persistent_[h]) continue;
    ahead += map_.group(h).padded;
    if (ahead > prefetch_elems_) break;
    if (slot_of(h) >= 0) continue;
    int s = free_slot_for(h);
    if (s < 0) break;  // no free slot: the order is sequential, so stop at the first that does not fit
    start_gather(h, s);
  }
}

CView ParamGatherer::acquire(int g, Pass pass) {
  const int p = pass == Pass::forward ? 0 : 1;
  auto& tr = trace_[p];
  if (!traced_[p]) {
    if (!tr.empty() && tr.front() == g)
      traced_[p] = true;  // the pass has started again: the trace is complete
    else
      tr.push_back(g);
  }
  if (traced_[p]) {
    if (tr.front() == g)
      pos_[p] = 0;
    else if (pos_[p] + 1 < tr.size() && tr[pos_[p] + 1] == g)
      ++pos_[p];
  }
  if (persistent_[g]) return {};  // the engine answers for persistent groups
  int s = slot_of(g);
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
  ++acquires_;
  if (slot.work) {
    slot.work->wait();
    slot.work.reset();
  }
  slot.held = true;
  return {slot.mem.data(), dtype_};
}

void ParamGatherer::release(int g, Pass) {
  if (persistent_[g]) return;
  int s = slot_of(g);
  TZ_CHECK(s >= 0 && slots_[s].held, "stage 3: release of group ", g, " that is not gathered");
  slots_[s].held = false;
  slots_[s].group = -1;
}

void ParamGatherer::progress() {
  for (auto& s : slots_)
    if (s.work && s.work->test()) s.work.reset();
}

}  // namespace tz
