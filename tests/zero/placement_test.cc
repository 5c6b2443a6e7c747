// place() at its own layer: for each stage and offload setting, the per-group facts the engine and the
// plan read (where params, gradients and optimizer states live, what range this rank updates, whether
// params are gathered again after the step), written out here as a table, and the settings it refuses.
#include "zero/placement.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/error.h"
#include "tests/common/error_message.h"
#include "model/model_config.h"
#include "model/param_layout.h"
#include "zero/shard_map.h"

namespace tz {
namespace {

struct World {
  ParamLayout layout = ParamLayout::build(model_preset("tiny"));
  ShardMap map{layout, 2, 1};  // rank 1 of 2
};

Placement placed(const World& w, int stage, OffloadOptions o = {}, DType working = DType::f32,
                 std::size_t persistence = 0) {
  ZeroOptions z;
  z.stage = stage;
  z.param_persistence_threshold = persistence;
  return place(w.layout, w.map, working, z, o);
}

OffloadOptions offload(Tier optimizer, Tier param = Tier::device) {
  OffloadOptions o;
  o.optimizer = optimizer;
  o.param = param;
  o.nvme_paths = {"unused"};
  return o;
}

// What one group is expected to be, field by field.
struct Expect {
  bool params_sharded;
  Tier params_home;
  bool grads_sharded;
  Tier grad_home;
  bool whole_range;  // opt_range is the whole padded group (else this rank's shard)
  Tier master, m, v;
  bool master_is_params;
  Tier update_on;
  bool regather;
};

void expect_group(const World& w, const Placement& p, int g, const Expect& e, const std::string& what) {
  SCOPED_TRACE(what + ", group " + std::to_string(g));
  const GroupPlacement& gp = p.groups[g];
  EXPECT_EQ(gp.params_sharded, e.params_sharded);
  EXPECT_EQ(gp.params_home, e.params_home);
  EXPECT_EQ(gp.grads_sharded, e.grads_sharded);
  EXPECT_EQ(gp.grad_home, e.grad_home);
  const Shard want = e.whole_range ? Shard{0, w.map.group(g).padded} : w.map.shard(g);
  EXPECT_EQ(gp.opt_range.offset, want.offset);
  EXPECT_EQ(gp.opt_range.count, want.count);
  EXPECT_EQ(gp.master_home, e.master);
  EXPECT_EQ(gp.m_home, e.m);
  EXPECT_EQ(gp.v_home, e.v);
  EXPECT_EQ(gp.master_is_params, e.master_is_params);
  EXPECT_EQ(gp.update_on, e.update_on);
  EXPECT_EQ(gp.regather_after_step, e.regather);
}

void expect_all(const World& w, const Placement& p, const Expect& e, const std::string& what) {
  ASSERT_EQ(p.groups.size(), w.layout.groups.size());
  for (int g = 0; g < int(p.groups.size()); ++g) expect_group(w, p, g, e, what);
}

constexpr Tier D = Tier::device, H = Tier::host, N = Tier::nvme;

TEST(Placement, EachStageWithoutOffloadPlacesEveryGroupAsZeroDefinesIt) {
  const World w;
  const Placement p0 = placed(w, 0), p1 = placed(w, 1), p2 = placed(w, 2), p3 = placed(w, 3);
  EXPECT_FALSE(p0.reduce_scatter);
  EXPECT_TRUE(p0.reduce);
  for (const Placement* p : {&p1, &p2, &p3}) EXPECT_TRUE(p->reduce_scatter);
  expect_all(w, p0, {false, D, false, D, true, D, D, D, true, D, false}, "stage 0");
  expect_all(w, p1, {false, D, false, D, false, D, D, D, true, D, true}, "stage 1");
  expect_all(w, p2, {false, D, true, D, false, D, D, D, true, D, true}, "stage 2");
  expect_all(w, p3, {true, D, true, D, false, D, D, D, true, D, false}, "stage 3");
  EXPECT_EQ(p3.world, 2);
  EXPECT_EQ(p3.rank, 1);
}

TEST(Placement, OffloadedOptimizerStatesMoveTheUpdateAndTheGradientShardToTheHost) {
  const World w;
  expect_all(w, placed(w, 1, offload(H)), {false, D, false, D, false, H, H, H, false, H, true}, "stage 1, cpu");
  expect_all(w, placed(w, 2, offload(H)), {false, D, true, H, false, H, H, H, false, H, true}, "stage 2, cpu");
  expect_all(w, placed(w, 3, offload(N)), {true, D, true, H, false, N, N, N, false, H, false}, "stage 3, nvme");
  expect_all(w, placed(w, 0, offload(N)), {false, D, false, D, true, N, N, N, false, H, false}, "stage 0, nvme");
  expect_all(w, placed(w, 3, offload(H, H)), {true, H, true, H, false, H, H, H, false, H, false},
             "stage 3, cpu + param cpu");
  expect_all(w, placed(w, 3, offload(D, N)), {true, N, true, D, false, D, D, D, false, D, false},
             "stage 3, param nvme");
}

// A 16-bit working copy is never the master; fp32 on the device is, unless its shard lives elsewhere.
TEST(Placement, OnlyFp32WorkingParamsOnTheDeviceServeAsTheMaster) {
  const World w;
  expect_all(w, placed(w, 2, {}, DType::bf16), {false, D, true, D, false, D, D, D, false, D, true}, "bf16");
  expect_all(w, placed(w, 1, {}, DType::f16), {false, D, false, D, false, D, D, D, false, D, true}, "fp16");
}

// Stage 3 keeps groups below param_persistence_threshold whole on every rank (gathered after the step).
TEST(Placement, Stage3KeepsSmallGroupsWholeOnEveryRank) {
  const World w;
  const int fin = w.layout.final_norm_group();
  const std::size_t small = w.layout.groups[fin].count;
  for (int g = 0; g < int(w.layout.groups.size()); ++g) ASSERT_TRUE(g == fin || w.layout.groups[g].count > small);
  const Placement p = placed(w, 3, offload(D, H), DType::f32, small + 1);
  for (int g = 0; g < int(p.groups.size()); ++g) {
    if (g == fin)
      expect_group(w, p, g, {false, D, true, D, false, D, D, D, true, D, true}, "persistent");
    else
      expect_group(w, p, g, {true, H, true, D, false, D, D, D, false, D, false}, "sharded");
  }
}

// A world of one: stage 0 needs no collective, a sharded stage still reduces (its shard is the group)
// and nothing is gathered again.
TEST(Placement, AtOneRankOnlyShardedStagesReduce) {
  World w;
  w.map = ShardMap(w.layout, 1, 0);
  EXPECT_FALSE(placed(w, 0).reduce);
  EXPECT_TRUE(placed(w, 1).reduce);
  for (const GroupPlacement& g : placed(w, 2).groups) EXPECT_FALSE(g.regather_after_step);
}

// offload_optimizer.ratio: whole groups, in group order, go to the host until the class's share is met;
// each class on its own.
TEST(Placement, TheOffloadRatioSplitsEachOptimizerClassByWholeGroupsInOrder) {
  const World w;
  OffloadOptions o = offload(H);
  o.host_ratio_master = 1.0;
  o.host_ratio_m = 0.0;
  o.host_ratio_v = 0.5;
  const Placement p = placed(w, 2, o);
  std::size_t total = 0, on_host = 0, largest = 0;
  bool seen_device = false;
  for (const GroupPlacement& g : p.groups) {
    total += g.opt_range.count;
    largest = std::max(largest, g.opt_range.count);
    EXPECT_EQ(g.master_home, H);
    EXPECT_EQ(g.m_home, D);
    EXPECT_EQ(g.update_on, H);  // any state off the device: the CPU Adam updates the group
    if (g.v_home == H) {
      EXPECT_FALSE(seen_device) << "the host groups of a class are a prefix in group order";
      on_host += g.opt_range.count;
    } else {
      seen_device = true;
    }
  }
  EXPECT_TRUE(seen_device);
  EXPECT_GT(on_host, 0u);
  // Within half the largest group of the asked share.
  EXPECT_LE(std::abs(double(on_host) - 0.5 * double(total)), 0.5 * double(largest));
}


TEST(Placement, SettingsZeroCannotHonourAreRefusedByName) {
  const World w;
  auto has = [](const std::string& m, const std::string& part) {
    EXPECT_NE(m.find(part), std::string::npos) << m;
  };
  has(testing::error_message([&] { placed(w, 4); }), "ZeRO stage must be 0, 1, 2 or 3, got 4");
  has(testing::error_message([&] { placed(w, 2, offload(D, H)); }), "offload_param needs ZeRO stage 3");
  OffloadOptions no_path = offload(N);
  no_path.nvme_paths.clear();
  has(testing::error_message([&] { placed(w, 2, no_path); }), "offloading to nvme needs at least one --nvme-path");
  OffloadOptions acts;
  acts.activations = N;
  has(testing::error_message([&] { placed(w, 1, acts); }), "activation checkpoints can be offloaded to cpu, not nvme");
  OffloadOptions ratio = offload(H);
  ratio.host_ratio_m = 1.5;
  has(testing::error_message([&] { placed(w, 1, ratio); }), "an offload ratio must be in [0, 1], got 1.5");
}

}  // namespace
}  // namespace tz
