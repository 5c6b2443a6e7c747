// OptimizerSwapper: store layout, the staging ring and the read/update/write pipeline.
#include "zero/optimizer_swapper.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/error.h"
#include "core/host_memory.h"

namespace tz {
namespace {
std::uint64_t round_up64(std::uint64_t n, std::uint64_t a) { return (n + a - 1) / a * a; }
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

std::size_t optimizer_chunk_elems(std::size_t sub_group, std::size_t block) {
  // Whole multiples of block/2 elements: every sub-group then starts on a block boundary both in the
  // fp32 state arrays and in 2-byte (bf16/fp16) parameter shards written back per sub-group.
  std::size_t per_block = block / 2;
  return std::max(per_block, sub_group / per_block * per_block);
}

OptimizerSwapPlan plan_optimizer_swap(std::vector<std::size_t> counts, std::uint64_t base, std::size_t sub_group,
                                      int buffer_count, std::size_t block) {
  TZ_CHECK(buffer_count >= 3,
           "offload_optimizer.buffer_count must be at least 3 (read, update, write in flight), got ", buffer_count);
  OptimizerSwapPlan p;
  p.base = base;
  std::size_t largest = 0;
  for (std::size_t c : counts) {
    largest = std::max(largest, c);
    p.bytes += 3 * round_up64(std::uint64_t(c) * sizeof(float), block);  // master, m, v: block-aligned arrays
  }
  // A sub-group larger than the largest range would only waste staging memory.
  p.chunk = std::min(optimizer_chunk_elems(sub_group, block), std::size_t(round_up64(largest, block / 2)));
  p.buffers = buffer_count;
  p.slot_bytes = round_up(3 * p.chunk * sizeof(float), kDirectIoAlign);
  p.counts = std::move(counts);
  return p;
}

OptimizerSwapPlan plan_packed_swap(const std::vector<CompressedLayout>& layouts, std::uint64_t base,
                                   std::size_t sub_group, int buffer_count, std::size_t block) {
  std::vector<std::size_t> counts;
  for (const CompressedLayout& l : layouts) counts.push_back(l.range);
  OptimizerSwapPlan p = plan_optimizer_swap(counts, base, sub_group, buffer_count, block);
  p.bytes = 0;
  p.slot_bytes = kDirectIoAlign;
  // A record holds the whole pieces that fit in fp32's sub-group (its master, m and v: 12 bytes an element,
  // less the record's alignment), so the ring is no larger than fp32's and holds more elements.
  const std::size_t record = 12 * p.chunk - 2 * 64;
  for (std::size_t g = 0; g < layouts.size(); ++g)
    for (auto& [begin, layout] : cut_layout(layouts[g], p.chunk, record)) {
      PackedUnit u;
      u.g = int(g);
      u.begin = begin;
      u.m_byte = round_up(layout.master_bytes(), 64);
      u.v_byte = u.m_byte + round_up(layout.moment_array_bytes(), 64);
      u.bytes = u.v_byte + layout.moment_array_bytes();
      u.layout = std::move(layout);
      u.offset = base + p.bytes;
      p.bytes += round_up64(u.bytes, block);
      p.slot_bytes = std::max(p.slot_bytes, round_up(u.bytes, kDirectIoAlign));
      p.packed.push_back(std::move(u));
    }
  return p;
}

std::vector<BufferSpec> OptimizerSwapper::buffers(const OptimizerSwapPlan& plan) {
  std::vector<BufferSpec> v;
  for (int i = 0; i < plan.buffers; ++i)
    v.push_back({"optimizer swap buffer " + std::to_string(i), "host staging", MemoryKind::pinned_host,
                 plan.slot_bytes});
  return v;
}

OptimizerSwapper::OptimizerSwapper(NvmeStore& store, OptimizerSwapPlan plan, PlannedBuffers& planned)
    : store_(store), plan_(std::move(plan)), counts_(plan_.counts), chunk_(plan_.chunk) {
  const std::size_t block = store.block_size();
  std::uint64_t off = plan_.base;
  for (const PackedUnit& u : plan_.packed) units_.push_back({u.g, u.begin, u.layout.range});
  if (packed()) off += plan_.bytes;
  for (std::size_t g = 0; g < counts_.size() && !packed(); ++g) {
    group_base_.push_back(off);
    array_bytes_.push_back(round_up64(std::uint64_t(counts_[g]) * sizeof(float), block));
    off += 3 * array_bytes_.back();
    for (std::size_t b = 0; b < counts_[g]; b += chunk_)
      units_.push_back({int(g), b, std::min(chunk_, counts_[g] - b)});
  }
  TZ_CHECK(off <= store.capacity(), "the NVMe store holds ", store.capacity(), " bytes; the optimizer states need ",
           off - plan_.base, " from offset ", plan_.base);
  for (int i = 0; i < plan_.buffers; ++i)
    slots_.push_back({planned.take<float>("optimizer swap buffer " + std::to_string(i)), {}});
}

OptimizerSwapper::~OptimizerSwapper() {
  for (auto& s : slots_)
    for (auto& h : s.io) {
      try {
        if (h.valid()) h.wait();
      } catch (const std::exception& e) {
        log_line(std::string("optimizer swap I/O failed at shutdown: ") + e.what());
      }
    }
}

std::vector<std::span<std::byte>> OptimizerSwapper::regions() {
  std::vector<std::span<std::byte>> r;
  for (auto& s : slots_) r.emplace_back(reinterpret_cast<std::byte*>(s.buf.data()), s.buf.bytes());
  return r;
}

std::uint64_t OptimizerSwapper::array_offset(int g, int array) const {
  return group_base_[g] + std::uint64_t(array) * array_bytes_[g];
}

void OptimizerSwapper::issue(Slot& s, const Unit& u, bool write, int arrays) {
  // Each sub-group's extent starts on a block boundary (chunk_ is whole blocks); its length is padded
  // to 4 KiB for O_DIRECT and stays inside the array's block-aligned region.
  const std::uint64_t len = round_up64(std::uint64_t(u.n) * sizeof(float), kDirectIoAlign);
  for (int a = 0; a < arrays; ++a) {
    std::uint64_t off = array_offset(u.g, a) + std::uint64_t(u.begin) * sizeof(float);
    float* buf = slot_array(s, a);
    s.io.push_back(write ? store_.write(off, buf, len) : store_.read(off, buf, len));
    (write ? stats_.write_bytes : stats_.read_bytes) += double(len);
  }
}

void OptimizerSwapper::issue_unit(Slot& s, std::size_t i, bool write) {
  if (!packed()) return issue(s, units_[i], write);
  const PackedUnit& u = plan_.packed[i];
  const std::uint64_t len = round_up64(u.bytes, kDirectIoAlign);
  s.io.push_back(write ? store_.write(u.offset, s.buf.data(), len)
                       : store_.read(u.offset, s.buf.data(), len));
  (write ? stats_.write_bytes : stats_.read_bytes) += double(len);
}

CompressedArrays OptimizerSwapper::packed_arrays(Slot& s, const PackedUnit& u) {
  std::uint8_t* b = reinterpret_cast<std::uint8_t*>(s.buf.data());
  return {&u.layout, b, b + u.m_byte, b + u.v_byte};
}

void OptimizerSwapper::wait(Slot& s) {
  auto t0 = std::chrono::steady_clock::now();
  for (auto& h : s.io) h.wait();
  s.io.clear();
  stats_.wait_seconds += seconds_since(t0);
}

void OptimizerSwapper::initialize(int g, const float* master) {
  Slot& s = slots_[0];
  if (packed()) {
    for (std::size_t i = 0; i < units_.size(); ++i) {
      const PackedUnit& u = plan_.packed[i];
      if (u.g != g) continue;
      std::memset(s.buf.data(), 0, s.buf.bytes());  // the padding between arrays, written too
      init_compressed(packed_arrays(s, u), master + u.begin);
      issue_unit(s, i, true);
      wait(s);
    }
    return;
  }
  for (std::size_t b = 0; b < counts_[g]; b += chunk_) {
    Unit u{g, b, std::min(chunk_, counts_[g] - b)};
    std::memcpy(slot_array(s, 0), master + b, u.n * sizeof(float));
    std::memset(slot_array(s, 1), 0, chunk_ * sizeof(float));
    std::memset(slot_array(s, 2), 0, chunk_ * sizeof(float));
    issue(s, u, true);
    wait(s);
  }
}

void OptimizerSwapper::for_each(const Update& fn, bool write_back) {
  TZ_CHECK(!packed(), "internal: the fp32 pass over compressed optimizer states on NVMe");
  pipeline(
      [&](std::size_t i, Slot& s) {
        const Unit& u = units_[i];
        fn(u.g, u.begin, u.n, slot_array(s, 0), slot_array(s, 1), slot_array(s, 2));
      },
      write_back);
}

void OptimizerSwapper::for_each_packed(const PackedUpdate& fn, bool write_back) {
  TZ_CHECK(packed(), "internal: the compressed pass over fp32 optimizer states on NVMe");
  pipeline([&](std::size_t i, Slot& s) { fn(plan_.packed[i], packed_arrays(s, plan_.packed[i])); },
           write_back);
}

void OptimizerSwapper::pipeline(const std::function<void(std::size_t i, Slot& s)>& fn, bool write_back) {
  const std::size_t K = units_.size(), B = slots_.size();
  // Unit i uses slot i % B: reading unit i waits for the write-back of unit i - B in the same slot.
  auto start_read = [&](std::size_t i) {
    Slot& s = slots_[i % B];
    wait(s);
    issue_unit(s, i, false);
  };
  for (std::size_t i = 0; i < std::min(K, B - 1); ++i) start_read(i);
  for (std::size_t i = 0; i < K; ++i) {
    Slot& s = slots_[i % B];
    wait(s);
    fn(i, s);
    if (write_back) issue_unit(s, i, true);
    // The next read reuses the slot of unit i - 1, whose write-back ran while Adam updated unit i.
    if (i + B - 1 < K) start_read(i + B - 1);
  }
  for (auto& s : slots_) wait(s);
}

void OptimizerSwapper::read_master(int g, float* out) {
  Slot& s = slots_[0];
  if (packed()) {
    std::vector<float> m, v;
    for (std::size_t i = 0; i < units_.size(); ++i) {
      const PackedUnit& u = plan_.packed[i];
      if (u.g != g) continue;
      issue_unit(s, i, false);
      wait(s);
      for (const StatePiece& p : u.layout.pieces) {
        m.resize(p.span), v.resize(p.span);
        decode_piece(packed_arrays(s, u), p, out + u.begin + p.begin, m.data(), v.data());
      }
    }
    return;
  }
  for (std::size_t b = 0; b < counts_[g]; b += chunk_) {
    Unit u{g, b, std::min(chunk_, counts_[g] - b)};
    issue(s, u, false, 1);  // the master array alone
    wait(s);
    std::memcpy(out + b, slot_array(s, 0), u.n * sizeof(float));
  }
}

}  // namespace tz
