// The two NVMe swappers at their own layer, over a real store in a temporary folder (io_uring, O_DIRECT)
// and a cpu device's pinned memory: the optimizer swapper visits every sub-group of every group in order,
// each with what the last pass wrote (the initial master with m = v = 0 first), and a read-only pass
// leaves the store as it was; the parameter swapper's shards come back as their working dtype after
// initialize and after a write-back through its ring, its extents block-aligned and disjoint.
#include <gtest/gtest.h>

#include <algorithm>

#include "model/model_config.h"
#include "model/param_layout.h"
#include "tests/common/test_dir.h"
#include "zero/optimizer_swapper.h"
#include "zero/param_swapper.h"

namespace tz {
namespace {

constexpr std::size_t kBlock = 4096;

NvmeStoreOptions store_options(const testing::TestDir& dir, std::uint64_t bytes) {
  NvmeStoreOptions o;
  o.paths = {dir.path()};
  o.bytes = bytes;
  o.block_size = kBlock;
  o.queue_depth = 4;
  o.run_id = "swappers-test";
  return o;
}

float initial(int g, std::size_t i) { return float(g * 10'000 + int(i % 10'000)) / 8.0f; }

TEST(OptimizerSwapper, EverySubGroupIsVisitedInOrderWithWhatTheLastPassWrote) {
  testing::TestDir dir;
  const std::vector<std::size_t> counts = {5000, 3000, 10'000};
  const OptimizerSwapPlan plan = plan_optimizer_swap(counts, 0, 2048, 3, kBlock);
  EXPECT_EQ(plan.chunk, 2048u);
  NvmeStore store(store_options(dir, plan.bytes));
  auto dev = make_cpu_device();
  PlannedBuffers planned(*dev, OptimizerSwapper::buffers(plan));
  OptimizerSwapper swap(store, plan, planned);
  planned.expect_all_taken();
  for (int g = 0; g < 3; ++g) {
    std::vector<float> master(counts[g]);
    for (std::size_t i = 0; i < master.size(); ++i) master[i] = initial(g, i);
    swap.initialize(g, master.data());
  }
  for (int pass = 0; pass < 3; ++pass) {
    SCOPED_TRACE("pass " + std::to_string(pass));
    std::vector<std::size_t> next(3, 0);  // the next element expected per group
    int last_group = 0;
    swap.for_each(
        [&](int g, std::size_t begin, std::size_t n, float* p, float* m, float* v) {
          ASSERT_GE(g, last_group);  // groups in order
          last_group = g;
          ASSERT_EQ(begin, next[g]);  // sub-groups in order, contiguous
          ASSERT_LE(n, plan.chunk);
          next[g] = begin + n;
          for (std::size_t i = 0; i < n; ++i) {
            // After `pass` earlier passes (the third pass reads without writing back below).
            const int done = std::min(pass, 2);
            ASSERT_EQ(p[i], initial(g, begin + i) + float(done)) << g << " " << begin + i;
            ASSERT_EQ(m[i], float(done)) << g << " " << begin + i;
            ASSERT_EQ(v[i], float(done * g)) << g << " " << begin + i;
            p[i] += 1, m[i] += 1, v[i] += float(g);
          }
        },
        pass < 2);
    EXPECT_EQ(next, counts);  // every element of every group visited
  }
  for (int g = 0; g < 3; ++g) {
    std::vector<float> out(counts[g]);
    swap.read_master(g, out.data());
    for (std::size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], initial(g, i) + 2.0f) << g << " " << i;
  }
  EXPECT_GT(swap.stats().read_bytes, 0);
  EXPECT_GT(swap.stats().write_bytes, 0);
}

struct ShardedModel {
  ParamLayout layout = ParamLayout::build(model_preset("tiny"));
  ShardMap map{layout, 2, 1};
  Placement place;
  ShardedModel() {
    ZeroOptions zero;
    zero.stage = 3;
    zero.param_persistence_threshold = 0;
    OffloadOptions o;
    o.param = Tier::nvme;
    o.nvme_paths = {"unused"};
    place = tz::place(layout, map, DType::bf16, zero, o);
  }
};

TEST(ParamSwapper, ShardExtentsAreBlockAlignedDisjointAndInGroupOrder) {
  const ShardedModel s;
  const ParamSwapPlan plan = plan_param_swap(s.map, s.place, 3 * kBlock, kBlock, 2048);
  ASSERT_TRUE(plan.any());
  std::uint64_t next = 3 * kBlock;
  for (int g = 0; g < s.map.groups(); ++g) {
    ASSERT_EQ(plan.offset[g], std::int64_t(next)) << g;
    EXPECT_EQ(plan.count[g], s.map.group(g).shard_count);
    next += round_up(s.map.group(g).shard_count * 2, kBlock);
  }
  EXPECT_EQ(plan.bytes, next - 3 * kBlock);
  EXPECT_EQ(plan.slots, 2);
  EXPECT_EQ(plan.slot_bytes, round_up(std::size_t(2048) * 2, kDirectIoAlign));
}

TEST(ParamSwapper, ShardsComeBackInTheWorkingDtypeAfterInitializeAndAfterAWriteBack) {
  testing::TestDir dir;
  const ShardedModel s;
  const ParamSwapPlan plan = plan_param_swap(s.map, s.place, 0, kBlock, 2048);
  NvmeStore store(store_options(dir, plan.bytes));
  auto dev = make_cpu_device();
  std::vector<BufferSpec> specs = ParamSwapper::buffers(plan);
  std::size_t largest = 0;
  for (int g = 0; g < s.map.groups(); ++g) largest = std::max(largest, round_up(plan.count[g] * 2, kDirectIoAlign));
  specs.push_back({"fetched", "test", MemoryKind::pinned_host, largest});
  PlannedBuffers planned(*dev, specs);
  ParamSwapper swap(store, plan, DType::bf16, planned);
  Buffer<std::uint8_t> fetched = planned.take<std::uint8_t>("fetched");
  auto check = [&](int g, float add) {
    ASSERT_LE(swap.fetch_bytes(g), fetched.bytes());
    swap.fetch(g, fetched.data()).wait();
    const bf16* got = reinterpret_cast<const bf16*>(fetched.data());
    for (std::size_t i = 0; i < plan.count[g]; ++i)
      ASSERT_EQ(got[i].bits, float_to_bf16(initial(g, i) + add).bits) << "group " << g << " element " << i;
  };
  for (int g = 0; g < s.map.groups(); ++g) {
    std::vector<float> v(plan.count[g]);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = initial(g, i);
    swap.initialize(g, v.data());
  }
  for (int g = 0; g < s.map.groups(); ++g) check(g, 0);
  // An update's write-back: sub-groups of up to 2048 elements through the two-buffer ring.
  for (int g = 0; g < s.map.groups(); ++g)
    for (std::size_t b = 0; b < plan.count[g]; b += 2048) {
      const std::size_t n = std::min<std::size_t>(2048, plan.count[g] - b);
      bf16* out = static_cast<bf16*>(swap.writeback_buffer());
      for (std::size_t i = 0; i < n; ++i) out[i] = float_to_bf16(initial(g, b + i) + 1.0f);
      swap.commit(g, b, n);
    }
  swap.drain();
  for (int g = 0; g < s.map.groups(); ++g) check(g, 1.0f);
  EXPECT_GT(swap.stats().write_bytes, 0);
}

}  // namespace
}  // namespace tz
