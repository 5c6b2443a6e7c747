// NVMe-resident optimizer states (ZeRO-Infinity): this rank's master, Adam m and v live in the NVMe store
// and pass through a ring of `buffer_count` host staging buffers in sub-groups of `sub_group_size`
// elements. During the step sub-group k+1 is read while Adam updates k and k-1 is written back. In fp32
// each group's three arrays are stored apart; compressed (issue 36), each sub-group is one record of its
// master, m and v in their formats (codes and absmax), cut on whole pieces of 256-blocks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/buffer_plan.h"
#include "offload/nvme_store.h"
#include "zero/compressed_states.h"

namespace tz {

struct SwapStats {
  double read_bytes = 0, write_bytes = 0;
  double wait_seconds = 0;  // time the step spent blocked on reads or writes
  void reset() { *this = SwapStats{}; }
};

// A sub-group of a group's compressed states, stored as one record: its master at byte 0, then m's and
// v's arrays (codes, then absmax), each on a cache line.
struct PackedUnit {
  int g = 0;
  std::size_t begin = 0;    // its first element in the group's optimizer range
  CompressedLayout layout;  // its pieces, from `begin` (the group layout's, cut on blocks)
  std::size_t m_byte = 0, v_byte = 0, bytes = 0;
  std::uint64_t offset = 0;  // in the store, on a block
};

// The store layout and the staging ring, planned once (a pure function of the counts and settings).
struct OptimizerSwapPlan {
  std::vector<std::size_t> counts;  // per group: this rank's optimizer elements
  std::uint64_t base = 0, bytes = 0;  // the store range of the states
  std::size_t chunk = 0;            // elements per sub-group
  int buffers = 0;                  // staging buffers in the ring
  std::size_t slot_bytes = 0;       // each: master, m and v of one sub-group, page-rounded
  std::vector<PackedUnit> packed;   // compressed states: every sub-group of every group, in order
};

// Elements per sub-group: sub_group rounded down to a multiple of block/2 elements (at least one), so
// every sub-group starts on a block boundary in fp32 state arrays and in 2-byte parameter shards.
std::size_t optimizer_chunk_elems(std::size_t sub_group, std::size_t block);
OptimizerSwapPlan plan_optimizer_swap(std::vector<std::size_t> counts, std::uint64_t base, std::size_t sub_group,
                                      int buffer_count, std::size_t block);
// The same for compressed states: each group's layout (over its optimizer range) cut into units of whole
// pieces of at most a sub-group's elements, each unit a record of its bytes, block-aligned.
OptimizerSwapPlan plan_packed_swap(const std::vector<CompressedLayout>& layouts, std::uint64_t base,
                                   std::size_t sub_group, int buffer_count, std::size_t block);

class OptimizerSwapper {
 public:
  // The staging ring ("optimizer swap buffer i", pinned host memory) comes from `planned`.
  OptimizerSwapper(NvmeStore& store, OptimizerSwapPlan plan, PlannedBuffers& planned);
  ~OptimizerSwapper();

  static std::vector<BufferSpec> buffers(const OptimizerSwapPlan& plan);

  bool packed() const { return !plan_.packed.empty(); }

  // Writes group g's initial master values with m = v = 0 (blocking; before training).
  void initialize(int g, const float* master);
  // Runs fn over every sub-group of every group in order, pipelined: fn(g, begin, n, master, m, v)
  // updates elements [begin, begin + n) of group g's range in place; they are written back after, unless
  // `write_back` is false (a read-only pass: checkpoints).
  using Update = std::function<void(int g, std::size_t begin, std::size_t n, float* p, float* m, float* v)>;
  void for_each(const Update& fn, bool write_back = true);
  // The same over compressed states, a unit at a time: fn(unit, its arrays in the staging ring).
  using PackedUpdate = std::function<void(const PackedUnit& u, const CompressedArrays& a)>;
  void for_each_packed(const PackedUpdate& fn, bool write_back = true);
  // Reads group g's master values (blocking; for export).
  void read_master(int g, float* out);

  const SwapStats& stats() const { return stats_; }
  SwapStats& stats() { return stats_; }
  // The staging ring's memory (to register with io_uring).
  std::vector<std::span<std::byte>> regions();

 private:
  struct Unit {
    int g;
    std::size_t begin, n;
  };
  struct Slot {
    Buffer<float> buf;
    std::vector<IoHandle> io;  // reads or writes in flight for the unit in this slot
  };
  std::uint64_t array_offset(int g, int array) const;  // array 0 master, 1 m, 2 v
  float* slot_array(Slot& s, int array) { return s.buf.data() + array * chunk_; }
  // Reads or writes the first `arrays` of the unit's arrays (master, m, v).
  void issue(Slot& s, const Unit& u, bool write, int arrays = 3);
  // Reads or writes unit i: its three arrays, or its record.
  void issue_unit(Slot& s, std::size_t i, bool write);
  CompressedArrays packed_arrays(Slot& s, const PackedUnit& u);
  // Reads unit i into slot i % B, runs fn(i, slot) in order, writes it back unless !write_back.
  void pipeline(const std::function<void(std::size_t i, Slot& s)>& fn, bool write_back);
  void wait(Slot& s);

  NvmeStore& store_;
  OptimizerSwapPlan plan_;
  std::vector<std::size_t> counts_;
  std::vector<std::uint64_t> group_base_;
  std::vector<std::uint64_t> array_bytes_;  // per group: one array's block-aligned size
  std::size_t chunk_ = 0;                   // elements per sub-group
  std::vector<Unit> units_;
  std::vector<Slot> slots_;
  SwapStats stats_;
};

}  // namespace tz
