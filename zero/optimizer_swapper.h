// NVMe-resident optimizer states (ZeRO-Infinity): this rank's fp32 master, Adam m and v live in the
// NVMe store and pass through a ring of `buffer_count` host staging buffers in sub-groups of
// `sub_group_size` elements. During the step sub-group k+1 is read while Adam updates k and k-1 is
// written back.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/memory_budget.h"
#include "offload/aligned_buffer.h"
#include "offload/nvme_store.h"

namespace tz {

struct SwapStats {
  double read_bytes = 0, write_bytes = 0;
  double wait_seconds = 0;  // time the step spent blocked on reads or writes
  void reset() { *this = SwapStats{}; }
};

class OptimizerSwapper {
 public:
  // counts[g]: this rank's optimizer elements of group g. Staging buffers are charged to `host`.
  OptimizerSwapper(NvmeStore& store, std::uint64_t base, std::vector<std::size_t> counts,
                   std::size_t sub_group, int buffer_count, MemoryBudget& host, Pinning pinning);
  ~OptimizerSwapper();

  // Store bytes the states of `counts` need (three block-aligned arrays per group).
  static std::uint64_t store_bytes(const std::vector<std::size_t>& counts, std::size_t block);
  // Elements per sub-group: sub_group rounded down to a multiple of block/2 elements (at least one), so
  // every sub-group starts on a block boundary in fp32 state arrays and in 2-byte parameter shards.
  static std::size_t chunk_elems(std::size_t sub_group, std::size_t block);

  // Writes group g's initial master values with m = v = 0 (blocking; before training).
  void initialize(int g, const float* master);
  // Runs fn over every sub-group of every group in order, pipelined: fn(g, begin, n, master, m, v)
  // updates elements [begin, begin + n) of group g's range in place; they are written back after.
  using Update = std::function<void(int g, std::size_t begin, std::size_t n, float* p, float* m, float* v)>;
  void for_each(const Update& fn);
  // Reads group g's master values (blocking; for export).
  void read_master(int g, float* out);

  const SwapStats& stats() const { return stats_; }
  SwapStats& stats() { return stats_; }
  std::size_t staging_bytes() const { return staging_bytes_; }
  // The staging ring's memory (to register with io_uring) and why pinning it was refused ("" if not).
  std::vector<std::span<std::byte>> regions();
  std::string pin_error() const { return slots_.empty() ? std::string() : slots_[0].buf.pin_error(); }

 private:
  struct Unit {
    int g;
    std::size_t begin, n;
  };
  struct Slot {
    AlignedBuffer buf;
    std::vector<IoHandle> io;  // reads or writes in flight for the unit in this slot
  };
  std::uint64_t array_offset(int g, int array) const;  // array 0 master, 1 m, 2 v
  float* slot_array(Slot& s, int array) { return reinterpret_cast<float*>(s.buf.data()) + array * chunk_; }
  // Reads or writes the first `arrays` of the unit's arrays (master, m, v).
  void issue(Slot& s, const Unit& u, bool write, int arrays = 3);
  void wait(Slot& s);

  NvmeStore& store_;
  std::vector<std::size_t> counts_;
  std::vector<std::uint64_t> group_base_;
  std::vector<std::uint64_t> array_bytes_;  // per group: one array's block-aligned size
  std::size_t chunk_ = 0;                   // elements per sub-group
  std::vector<Unit> units_;
  std::vector<Slot> slots_;
  MemoryBudget& host_;
  std::size_t staging_bytes_ = 0;
  SwapStats stats_;
};

}  // namespace tz
