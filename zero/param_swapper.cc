// ParamSwapper: shard extents, fetches, and the asynchronous write-back ring.
#include "zero/param_swapper.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "core/host_ops.h"

namespace tz {

ParamSwapPlan plan_param_swap(const ShardMap& map, const Placement& place, std::uint64_t base,
                              std::size_t block, std::size_t chunk) {
  ParamSwapPlan p;
  p.base = base;
  const std::size_t es = dtype_size(place.working);
  std::uint64_t off = base;
  std::size_t largest = 0;
  for (int g = 0; g < map.groups(); ++g) {
    const GroupPlacement& gp = place.groups[g];
    const bool nvme = gp.params_sharded && in_file(gp.params_home);
    p.offset.push_back(nvme ? std::int64_t(off) : -1);
    p.count.push_back(map.group(g).shard_count);
    if (!nvme) continue;
    off += round_up(map.group(g).shard_count * es, block);
    largest = std::max(largest, std::min(chunk, map.group(g).shard_count));
  }
  p.bytes = off - base;
  if (p.bytes) {
    p.slots = 2;  // one filled by the update while the other's write is in flight
    p.slot_bytes = round_up(largest * es, kDirectIoAlign);
  }
  return p;
}

std::vector<BufferSpec> ParamSwapper::buffers(const ParamSwapPlan& plan) {
  std::vector<BufferSpec> v;
  for (int i = 0; i < plan.slots; ++i)
    v.push_back({"parameter write-back buffer " + std::to_string(i), "host staging", MemoryKind::pinned_host,
                 plan.slot_bytes});
  return v;
}

ParamSwapper::ParamSwapper(NvmeStore& store, ParamSwapPlan plan, DType dtype, PlannedBuffers& planned)
    : store_(store), plan_(std::move(plan)), dtype_(dtype), writes_(plan_.slots) {
  for (int i = 0; i < plan_.slots; ++i)
    ring_.push_back(planned.take<std::uint8_t>("parameter write-back buffer " + std::to_string(i)));
}

ParamSwapper::~ParamSwapper() {
  for (auto& h : writes_) {
    try {
      if (h.valid()) h.wait();
    } catch (const std::exception& e) {
      log_line(std::string("parameter write-back failed at shutdown: ") + e.what());
    }
  }
}

std::vector<std::span<std::byte>> ParamSwapper::regions() {
  std::vector<std::span<std::byte>> r;
  for (auto& b : ring_) r.emplace_back(reinterpret_cast<std::byte*>(b.data()), b.bytes());
  return r;
}

std::size_t ParamSwapper::fetch_bytes(int g) const {
  return round_up(plan_.count[g] * dtype_size(dtype_), kDirectIoAlign);
}

void ParamSwapper::initialize(int g, const float* values) {
  TZ_CHECK(plan_.offset[g] >= 0, "group ", g, "'s parameter shard is not on NVMe");
  const std::size_t n = plan_.count[g], per = plan_.slot_bytes / dtype_size(dtype_);
  for (std::size_t b = 0; b < n; b += per) {
    const std::size_t m = std::min(per, n - b);
    host_cast(writeback_buffer(), dtype_, values + b, m);
    commit(g, b, m);
  }
  drain();
}

IoHandle ParamSwapper::fetch(int g, void* dst) {
  const std::size_t bytes = fetch_bytes(g);
  stats_.read_bytes += double(bytes);
  return store_.read(std::uint64_t(plan_.offset[g]), dst, bytes);
}

void* ParamSwapper::writeback_buffer() {
  IoHandle& h = writes_[next_];
  if (h.valid()) {
    auto t0 = std::chrono::steady_clock::now();
    h.wait();
    h = IoHandle();
    stats_.wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return ring_[next_].data();
}

void ParamSwapper::commit(int g, std::size_t begin, std::size_t n) {
  const std::size_t es = dtype_size(dtype_);
  const std::uint64_t bytes = round_up(n * es, kDirectIoAlign);
  TZ_CHECK(bytes <= plan_.slot_bytes, "a parameter write-back of ", bytes, " bytes exceeds its ",
           plan_.slot_bytes, "-byte buffer");
  writes_[next_] = store_.write(std::uint64_t(plan_.offset[g]) + begin * es, ring_[next_].data(), bytes);
  stats_.write_bytes += double(bytes);
  next_ = (next_ + 1) % ring_.size();
}

void ParamSwapper::drain() {
  auto t0 = std::chrono::steady_clock::now();
  for (auto& h : writes_)
    if (h.valid()) {
      h.wait();
      h = IoHandle();
    }
  stats_.wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace tz
