// Memory tiers as data, at their own layer: the three built in and their traits, the one tier-to-memory
// mapping, offload names, what a registration may not do, and a test-only fourth tier (host memory
// under another name and budget, tests/common/second_host_tier.h) through a device's pool and the memory
// plan: its states are counted there, its budget refuses a plan and an allocation naming it.
#include "zero/tier.h"

#include <gtest/gtest.h>

#include "core/device.h"
#include "model/model_config.h"
#include "tests/common/error_message.h"
#include "tests/common/second_host_tier.h"
#include "zero/memory_plan.h"
#include "zero/numa_tier.h"

namespace tz {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(Tiers, TheThreeBuiltInTiersComeFirstWithTheirMediaMemoryAndFlags) {
  const std::vector<Tier> all = tiers();
  ASSERT_GE(all.size(), 3u);
  EXPECT_EQ(all[0], Tier::device);
  EXPECT_EQ(all[1], Tier::host);
  EXPECT_EQ(all[2], Tier::nvme);
  EXPECT_EQ(tier_name(Tier::device), "device");
  EXPECT_EQ(tier_name(Tier::host), "host");
  EXPECT_EQ(tier_name(Tier::nvme), "nvme");
  EXPECT_TRUE(on_device(Tier::device));
  EXPECT_TRUE(in_host_memory(Tier::host));
  EXPECT_TRUE(in_file(Tier::nvme));
  EXPECT_FALSE(in_host_memory(Tier::device) || in_file(Tier::device) || on_device(Tier::host) || in_file(Tier::host) ||
               on_device(Tier::nvme) || in_host_memory(Tier::nvme));
  EXPECT_EQ(tier_traits(Tier::device).budget_flag, "--device-mem");
  EXPECT_EQ(tier_traits(Tier::host).budget_flag, "--host-mem");
  EXPECT_EQ(tier_traits(Tier::nvme).budget_flag, "--nvme-mem");
}

TEST(Tiers, OneMappingTakesTiersToMemoryKindsAndBack) {
  EXPECT_EQ(tier_memory(Tier::device), MemoryKind::device);
  EXPECT_EQ(tier_memory(Tier::host), MemoryKind::pinned_host);
  EXPECT_EQ(memory_tier(MemoryKind::device), Tier::device);
  EXPECT_EQ(memory_tier(MemoryKind::pinned_host), Tier::host);
  EXPECT_EQ(memory_tier(MemoryKind::pageable_host), Tier::host);
  EXPECT_TRUE(contains(testing::error_message([] { tier_memory(Tier::nvme); }), "tier 'nvme' is a file store"));
}

TEST(Tiers, OffloadNamesAsDeepSpeedSpellsThemAndAnUnknownOneListsEveryTier) {
  EXPECT_EQ(parse_offload_device("none", "--offload-optimizer"), Tier::device);
  EXPECT_EQ(parse_offload_device("device", "--offload-optimizer"), Tier::device);
  EXPECT_EQ(parse_offload_device("cpu", "--offload-optimizer"), Tier::host);
  EXPECT_EQ(parse_offload_device("host", "--offload-optimizer"), Tier::host);
  EXPECT_EQ(parse_offload_device("nvme", "--offload-optimizer"), Tier::nvme);
  const std::string m = testing::error_message([] { parse_offload_device("disk", "--offload-param"); });
  EXPECT_TRUE(contains(m, "--offload-param 'disk' is not an offload device: use none, cpu")) << m;
  EXPECT_TRUE(contains(m, "or nvme") || contains(m, ", nvme, ")) << m;
}

TEST(Tiers, ARegistrationThatWouldBreakTheListIsRefusedByName) {
  auto refused = [](TierTraits t) { return testing::error_message([&] { register_tier(std::move(t)); }); };
  EXPECT_TRUE(contains(refused({"disk2", {"disk2"}, TierMedium::file, MemoryKind::pinned_host, "--disk2-mem"}),
                       "tier 'disk2': only host-memory tiers can be registered"));
  EXPECT_TRUE(contains(refused({"gpu2", {"gpu2"}, TierMedium::host, MemoryKind::device, "--gpu2-mem"}),
                       "tier 'gpu2' must live in pinned host memory or a registered host pool, not device"));
  EXPECT_TRUE(contains(refused({"pinned", {"pinned"}, TierMedium::host, MemoryKind::pinned_host, "--pinned-mem"}),
                       "tier 'pinned' would share pinned host memory with tier 'host'"));
  const MemoryKind pool = register_host_pool("refusals");
  EXPECT_TRUE(contains(refused({"host", {"h"}, TierMedium::host, pool, "--h-mem"}),
                       "tier name 'host' is taken by tier 'host'"));
  EXPECT_TRUE(contains(refused({"cpu2", {"cpu"}, TierMedium::host, pool, "--cpu2-mem"}),
                       "offload device name 'cpu' is taken by tier 'host'"));
  EXPECT_TRUE(contains(refused({"", {}, TierMedium::host, pool, ""}), "a memory tier needs a name"));
  // A tier's NUMA node is its pool's (numa_tier registers both): one that says otherwise is refused.
  EXPECT_TRUE(contains(refused({"node3", {"node3"}, TierMedium::host, pool, "--node3-mem", 3}),
                       "tier 'node3' names NUMA node 3 but its memory, refusals, is bound to -1"));
  EXPECT_TRUE(contains(testing::error_message([] { register_host_pool("device"); }),
                       "host memory pool name 'device' is a built-in memory kind"));
  EXPECT_TRUE(contains(testing::error_message([] { register_host_pool("refusals"); }),
                       "host memory pool 'refusals' is registered already"));
}

// numa:N is registered once per node, its node a field of its traits (no table beside the registry).
TEST(Tiers, ANumaNodesTierIsRegisteredOnceWithItsNodeInItsTraits) {
  const Tier a = numa_tier(5), b = numa_tier(5), c = numa_tier(6);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(tier_traits(a).numa_node, 5);
  EXPECT_EQ(tier_numa_node(c), 6);
  EXPECT_EQ(tier_name(a), "numa:5");
  EXPECT_EQ(host_pool_numa_node(tier_traits(c).memory), 6);
  for (Tier t : {Tier::device, Tier::host, Tier::nvme}) EXPECT_EQ(tier_numa_node(t), -1) << tier_name(t);
}

TEST(Tiers, PerTierHoldsOneValuePerTierIndexedByTheTier) {
  PerTier<std::size_t> a, b(kUnlimited);
  EXPECT_EQ(a[Tier::nvme], 0u);
  EXPECT_EQ(b[Tier::host], kUnlimited);
  a[Tier::host] = 5;
  EXPECT_EQ(a[Tier::host], 5u);
  EXPECT_EQ(a[Tier::device], 0u);
  PerTier<std::size_t> c = a;
  EXPECT_TRUE(c == a);
  c[testing::second_host_tier()] = 1;
  EXPECT_FALSE(c == a);
}

TEST(SecondHostTier, ItsPoolIsAnAllocatorOfTheDeviceUnderItsOwnBudget) {
  const Tier t = testing::second_host_tier();
  const MemoryKind k = tier_memory(t);
  EXPECT_TRUE(is_host_pool(k));
  EXPECT_FALSE(is_host_pool(MemoryKind::pinned_host));
  EXPECT_EQ(memory_kind_name(k), "host2");
  EXPECT_EQ(memory_tier(k), t);
  EXPECT_EQ(parse_offload_device("host2", "--offload-optimizer"), t);
  EXPECT_TRUE(in_host_memory(t));
  DeviceOptions o;
  o.host_mem = 1 << 20;
  o.pool_mem[k] = 1 << 16;
  auto dev = make_cpu_device(o);
  {
    Buffer<float> a(dev->allocator(k), (1 << 16) / 4, "a host2 buffer");
    EXPECT_EQ(dev->budget(k).used(), std::size_t(1) << 16);
    EXPECT_EQ(dev->budget(MemoryKind::pinned_host).used(), 0u);  // not the host tier's bytes
    const std::string m = testing::error_message([&] { Buffer<float> b(dev->allocator(k), 1, "one float more"); });
    EXPECT_TRUE(contains(m, "host2")) << m;
    EXPECT_TRUE(contains(m, "one float more")) << m;
  }
  EXPECT_EQ(dev->budget(k).used(), 0u);
  EXPECT_EQ(dev->budget(k).peak(), std::size_t(1) << 16);
  // A pool registered after the device was made is not one of its allocators.
  const MemoryKind late = register_host_pool("late pool");
  EXPECT_TRUE(contains(testing::error_message([&] { dev->allocator(late); }),
                       "this device has no late pool memory (registered after the device was made)"));
}

PlanInputs inputs(Tier optimizer, Tier param) {
  PlanInputs in;
  in.model = model_preset("tiny");
  in.shape = {4, 64};
  in.dtype = DType::bf16;
  in.zero.stage = 3;
  in.zero.param_persistence_threshold = 0;
  in.offload.optimizer = optimizer;
  in.offload.param = param;
  in.world = 2;
  in.rank = 1;
  return in;
}

TEST(SecondHostTier, ThePlanCountsItsStatesThereAsTheHostTierWouldAndItsBudgetRefusesByName) {
  const Tier t = testing::second_host_tier();
  const MemoryPlan host = plan_memory(inputs(Tier::host, Tier::host)), other = plan_memory(inputs(t, t));
  // Every state the host plan keeps on the host tier is on the second one, in the same bytes; the
  // staging and scalars stay on the host tier.
  EXPECT_GT(other.state_bytes(t), 0u);
  EXPECT_EQ(other.state_bytes(t), host.state_bytes(Tier::host));
  EXPECT_EQ(other.state_bytes(Tier::host), 0u);
  EXPECT_EQ(other.total(t) + other.total(Tier::host), host.total(Tier::host));
  EXPECT_EQ(other.total(t), other.state_bytes(t));
  EXPECT_EQ(other.total(Tier::device), host.total(Tier::device));
  for (const BufferSpec& b : other.buffers)
    if (b.name.rfind("adam m ", 0) == 0) EXPECT_EQ(b.kind, tier_memory(t)) << b.name;
  EXPECT_TRUE(contains(other.table(), "total                                    host2")) << other.table();
  PlanInputs in = inputs(t, t);
  in.budget[t] = other.total(t);
  EXPECT_EQ(plan_memory(in).fit_problem(), "");
  in.budget[t] -= 1;
  const std::string m = plan_memory(in).fit_problem();
  EXPECT_TRUE(contains(m, "out of host2 memory budget")) << m;
  EXPECT_TRUE(contains(m, "raise the budget (--host2-mem)")) << m;
}

}  // namespace
}  // namespace tz
