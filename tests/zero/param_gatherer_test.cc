// ParamGatherer at its own layer, on a cpu device over a recording communicator of 4 ranks (every peer
// holds what this rank holds, so a gathered group is this rank's shard in each rank's block): a group's
// acquire gathers its shard from the device or from a host tier, one all-gather of the shard's length;
// the second pass of a kind gathers ahead along the traced order within the planned slots and gathers
// each group once; a group not sharded is never gathered; and misuse is refused by name.
#include "zero/param_gatherer.h"

#include <gtest/gtest.h>

#include "model/model_config.h"
#include "model/param_layout.h"
#include "tests/common/error_message.h"
#include "tests/common/recording_comm.h"
#include "zero/placement.h"

namespace tz {
namespace {

constexpr int kWorld = 4, kRank = 1;

struct Fixture {
  ParamLayout layout = ParamLayout::build(model_preset("tiny"));
  ShardMap map{layout, kWorld, kRank};
  ZeroOptions zero;
  OffloadOptions offload;
  Placement place;
  GatherPlan plan;
  std::unique_ptr<Device> dev = make_cpu_device();
  std::unique_ptr<Stream> stream = dev->create_stream();
  testing::RecordingComm comm{kWorld, kRank};
  std::unique_ptr<PlannedBuffers> planned;
  std::vector<PlacedArray<std::uint8_t>> shards;
  std::unique_ptr<ParamGatherer> gatherer;

  // Every group sharded (persistence 0) unless `persistence` says otherwise; shards on `home`.
  Fixture(Tier home, std::size_t prefetch, std::size_t persistence = 0) {
    zero.stage = 3;
    zero.param_persistence_threshold = persistence;
    zero.prefetch_bucket_size = prefetch;
    offload.param = home;
    place = tz::place(layout, map, DType::f32, zero, offload);
    plan = plan_gathers(map, place, zero);
    std::vector<BufferSpec> specs = ParamGatherer::buffers(plan, DType::f32);
    for (int g = 0; g < map.groups(); ++g)
      specs.push_back({"shard " + std::to_string(g), "test", tier_memory(home), map.group(g).shard_count * 4});
    planned = std::make_unique<PlannedBuffers>(*dev, specs);
    shards.reserve(std::size_t(map.groups()));  // `where` points into it
    std::vector<const PlacedArray<std::uint8_t>*> where;
    for (int g = 0; g < map.groups(); ++g) {
      shards.emplace_back(home, planned->take<std::uint8_t>("shard " + std::to_string(g)));
      const std::vector<float> v = values(g);
      dev->backend().copy_async(*stream, shards.back().data(), v.data(), v.size() * 4);
      where.push_back(&shards.back());
    }
    stream->synchronize();
    gatherer =
        std::make_unique<ParamGatherer>(*dev, *stream, comm, map, place, plan, where, prefetch, *planned);
    planned->expect_all_taken();
  }

  // This rank's shard of group g: distinct integers, exact in fp32.
  std::vector<float> values(int g) const {
    std::vector<float> v(map.group(g).shard_count);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(g * 100'000 + int(i));
    return v;
  }
  std::vector<float> gathered(CView view, int g) {
    std::vector<float> v(map.group(g).padded);
    dev->backend().copy_async(*stream, v.data(), view.ptr, v.size() * 4);
    stream->synchronize();
    return v;
  }
  void expect_gathered(CView view, int g) {
    ASSERT_NE(view.ptr, nullptr) << "group " << g;
    EXPECT_EQ(view.dtype, DType::f32);
    const std::vector<float> got = gathered(view, g), mine = values(g);
    for (int r = 0; r < kWorld; ++r)
      for (std::size_t i = 0; i < mine.size(); ++i)
        ASSERT_EQ(got[std::size_t(r) * mine.size() + i], mine[i]) << "group " << g << " rank block " << r << " element " << i;
  }
};

TEST(ParamGatherer, EachAcquireGathersThisRanksShardFromTheDeviceOrAHostTierInOneAllGather) {
  for (Tier home : {Tier::device, Tier::host}) {
    SCOPED_TRACE(tier_name(home));
    Fixture f(home, 0);  // no prefetch: each acquire gathers its own group only
    for (int g = 0; g < f.map.groups(); ++g) {
      const std::size_t before = f.comm.calls.size();
      const CView v = f.gatherer->acquire(g, Pass::forward);
      ASSERT_EQ(f.comm.calls.size(), before + 1) << "group " << g;
      const auto& c = f.comm.calls.back();
      EXPECT_EQ(c.kind, Collective::all_gather);
      EXPECT_EQ(c.count, f.map.group(g).shard_count);
      EXPECT_EQ(c.dtype, DType::f32);
      EXPECT_EQ(c.recv, v.ptr);
      // From the device shard itself; a host shard is first copied up into this rank's block of the slot.
      const void* send = home == Tier::device
                             ? static_cast<const void*>(f.shards[g].data())
                             : static_cast<const std::uint8_t*>(v.ptr) + std::size_t(kRank) * c.count * 4;
      EXPECT_EQ(c.send, send);
      f.expect_gathered(v, g);
      f.gatherer->release(g, Pass::forward);
    }
  }
}

TEST(ParamGatherer, TheSecondPassGathersAheadAlongTheTracedOrderAndEachGroupOnce) {
  // Room ahead for about two groups of the largest size.
  std::size_t largest = 0;
  {
    const Fixture probe(Tier::device, 0);
    for (int g = 0; g < probe.map.groups(); ++g) largest = std::max(largest, probe.map.group(g).padded);
  }
  Fixture f(Tier::device, 2 * largest + 1);
  const int G = f.map.groups();
  ASSERT_GE(f.plan.slots, 2);
  for (int g = 0; g < G; ++g) {  // the first pass traces: one gather per acquire
    const std::size_t before = f.comm.calls.size();
    f.gatherer->acquire(g, Pass::forward);
    EXPECT_EQ(f.comm.calls.size(), before + 1);
    f.gatherer->release(g, Pass::forward);
  }
  f.comm.calls.clear();
  // The first acquire of the next pass also gathers what follows it in the trace.
  f.expect_gathered(f.gatherer->acquire(0, Pass::forward), 0);
  EXPECT_GT(f.comm.calls.size(), 1u);
  f.gatherer->release(0, Pass::forward);
  for (int g = 1; g < G; ++g) {
    f.expect_gathered(f.gatherer->acquire(g, Pass::forward), g);
    f.gatherer->release(g, Pass::forward);
  }
  ASSERT_EQ(f.comm.calls.size(), std::size_t(G));  // each group gathered exactly once in the pass
  std::vector<std::size_t> counts;
  for (const auto& c : f.comm.calls) counts.push_back(c.count);
  std::vector<std::size_t> want;
  for (int g = 0; g < G; ++g) want.push_back(f.map.group(g).shard_count);
  EXPECT_EQ(counts, want);  // in the traced order
}

TEST(ParamGatherer, AGroupBelowThePersistenceThresholdIsTracedButNeverGathered) {
  const ParamLayout layout = ParamLayout::build(model_preset("tiny"));
  std::size_t smallest = layout.groups[0].count;
  for (const GroupSpec& g : layout.groups) smallest = std::min(smallest, g.count);
  Fixture f(Tier::device, 0, smallest + 1);
  int whole = 0;
  for (int g = 0; g < f.map.groups(); ++g) {
    const std::size_t before = f.comm.calls.size();
    const CView v = f.gatherer->acquire(g, Pass::backward);
    if (f.place.groups[g].params_sharded) {
      EXPECT_EQ(f.comm.calls.size(), before + 1);
      f.expect_gathered(v, g);
    } else {
      ++whole;
      EXPECT_EQ(v.ptr, nullptr);
      EXPECT_EQ(f.comm.calls.size(), before);
    }
    f.gatherer->release(g, Pass::backward);
  }
  EXPECT_GT(whole, 0);
}

TEST(ParamGatherer, AReleaseOfAGroupNotGatheredAndMoreGroupsHeldThanPlannedAreRefused) {
  Fixture f(Tier::host, 0);
  const std::string m = testing::error_message([&] { f.gatherer->release(1, Pass::forward); });
  EXPECT_NE(m.find("stage 3: release of group 1 that is not gathered"), std::string::npos) << m;
  // Without releasing, the non-embedding groups fill the slots; one more has nowhere to go.
  int held = 0, g = 0;
  std::string full;
  for (; g < f.map.groups() && full.empty(); ++g) {
    if (g == f.plan.held_group) continue;
    if (held < f.plan.slots) {
      f.gatherer->acquire(g, Pass::forward);
      ++held;
    } else {
      full = testing::error_message([&] { f.gatherer->acquire(g, Pass::forward); });
    }
  }
  EXPECT_NE(full.find("no free slot to gather group " + std::to_string(g - 1)), std::string::npos) << full;
}

}  // namespace
}  // namespace tz
