// core/numa.h on the machine's own nodes (node 0 everywhere; a second node under qemu,
// perf/scripts/numa_qemu.sh): memory bound to a node has every page there once touched (asked of the
// kernel with move_pages), untouched pages are reported as not in memory, a pool registered with a node
// gives a device allocator whose blocks are bound and listed, and the --numa-mem parser.
#include <gtest/gtest.h>

#include <sched.h>

#include <cstring>

#include "core/allocator.h"
#include "core/device.h"
#include "core/numa.h"
#include "tests/common/error_message.h"
#include "zero/numa_tier.h"

namespace tz {
namespace {

#define SKIP_WITHOUT_NUMA()                                                     \
  do {                                                                          \
    std::string why;                                                            \
    if (numa_nodes(&why).empty()) GTEST_SKIP() << "no NUMA node here: " << why; \
  } while (0)

TEST(Numa, TheNodesHaveMemoryCpusAndDistancesToEachOther) {
  SKIP_WITHOUT_NUMA();
  const std::vector<NumaNode> nodes = numa_nodes();
  bool any_cpus = false;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    EXPECT_GT(nodes[i].mem_total_bytes, 0u);
    EXPECT_LE(nodes[i].mem_free_bytes, nodes[i].mem_total_bytes);
    ASSERT_EQ(nodes[i].distances.size(), nodes.size());
    EXPECT_EQ(nodes[i].distances[i], 10);  // the ACPI SLIT's distance of a node to itself
    any_cpus = any_cpus || !nodes[i].cpus.empty();
    EXPECT_FALSE(nearest_cpus(nodes[i].id).empty()) << "node " << nodes[i].id;
  }
  EXPECT_TRUE(any_cpus);
}

TEST(Numa, MemoryBoundToEachNodeHasEveryTouchedPageThere) {
  SKIP_WITHOUT_NUMA();
  constexpr std::size_t kBytes = std::size_t(8) << 20;
  for (const NumaNode& n : numa_nodes()) {
    if (n.mem_free_bytes < 4 * kBytes) continue;
    void* p = map_node_memory(kBytes, n.id, "the test's buffer");
    const auto before = page_nodes(p, kBytes, 64);
    EXPECT_EQ(before.size(), 1u);
    EXPECT_EQ(before.count(-1), 1u) << "untouched pages are not in memory yet";
    std::memset(p, 1, kBytes);
    const auto after = page_nodes(p, kBytes);
    ASSERT_EQ(after.size(), 1u) << "node " << n.id;
    EXPECT_EQ(after.begin()->first, n.id);
    EXPECT_EQ(after.begin()->second, kBytes / 4096);  // every page asked about
    unmap_node_memory(p, kBytes);
  }
}

TEST(Numa, APoolBoundToNode0GivesAnAllocatorWhoseBlocksAreListedAndOnNode0) {
  SKIP_WITHOUT_NUMA();
  const MemoryKind k = register_host_pool("numa test pool", 0);
  EXPECT_EQ(host_pool_numa_node(k), 0);
  EXPECT_EQ(host_pool_numa_node(MemoryKind::pinned_host), -1);
  DeviceOptions o;
  o.pool_mem[k] = std::size_t(1) << 20;
  auto dev = make_device(DeviceKind::cpu, o);
  Allocator& a = dev->allocator(k);
  Allocation x = a.allocate(300'000, "x");
  std::memset(x.ptr, 7, 300'000);
  ASSERT_EQ(a.node_blocks().size(), 1u);
  EXPECT_EQ(a.node_blocks()[0].first, x.ptr);
  EXPECT_EQ(a.node_blocks()[0].second, 300'000u / 4096 * 4096 + 4096);
  const auto where = page_nodes(x.ptr, 300'000);
  ASSERT_EQ(where.size(), 1u);
  EXPECT_EQ(where.begin()->first, 0);
  const std::string m = testing::error_message([&] { a.allocate(800'000, "y"); });
  EXPECT_NE(m.find("numa test pool"), std::string::npos) << m;  // its own budget, named
  a.deallocate(x.ptr, 300'000);
  EXPECT_TRUE(a.node_blocks().empty());
  EXPECT_TRUE(dev->allocator(MemoryKind::pinned_host).node_blocks().empty());
}

// The CPU Adam's scope for a numa:N tier: narrowed to one CPU, every thread of the team runs there and
// gets its own mask back afterwards; given every allowed CPU (a one-node machine), it changes nothing.
TEST(Numa, AnOmpTeamOnCpusRunsThereAndPutsEveryThreadBack) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  std::vector<int> allowed;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &before)) allowed.push_back(c);
  {
    OmpTeamOnCpus all(allowed);
    EXPECT_FALSE(all.active());
  }
  if (allowed.size() < 2) GTEST_SKIP() << "one CPU: nothing to narrow";
  const int one = allowed.back();
  {
    OmpTeamOnCpus near({one});
    EXPECT_TRUE(near.active());
    int off = 0;
#pragma omp parallel reduction(+ : off)
    {
      cpu_set_t m;
      sched_getaffinity(0, sizeof m, &m);
      off += CPU_COUNT(&m) != 1 || !CPU_ISSET(one, &m) || sched_getcpu() != one;
    }
    EXPECT_EQ(off, 0);
  }
  int changed = 0;
#pragma omp parallel reduction(+ : changed)
  {
    cpu_set_t m;
    sched_getaffinity(0, sizeof m, &m);
    changed += !CPU_EQUAL(&m, &before);
  }
  EXPECT_EQ(changed, 0);
}

TEST(Numa, NumaMemParsesNodeSizePairsAndRefusesTheRest) {
  const auto m = parse_numa_mem("1=64G,0=512M,3=unlimited");
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m.at(1), std::size_t(64) << 30);
  EXPECT_EQ(m.at(0), std::size_t(512) << 20);
  EXPECT_EQ(m.at(3), kUnlimited);
  EXPECT_TRUE(parse_numa_mem("").empty());
  for (const char* bad : {"0", "=1G", "0=", "0=1G,", "0=1G,0=2G", "x=1G", "-1=1G", "1024=1G", "0=-1", "0=nan", "0=1e300"})
    EXPECT_NE(testing::error_message([&] { parse_numa_mem(bad); }).find("--numa-mem '" + std::string(bad) + "'"),
              std::string::npos)
        << bad;
  EXPECT_EQ(parse_numa_name("numa:7", "--offload-optimizer"), 7);
  EXPECT_EQ(parse_numa_name("cpu", "--offload-optimizer"), -1);
  for (const char* bad : {"numa:", "numa:x", "numa:-1", "numa:1024", "numa:00001"})
    EXPECT_NE(testing::error_message([&] { parse_numa_name(bad, "--offload-optimizer"); })
                  .find("--offload-optimizer '" + std::string(bad) + "': a NUMA node is a whole number"),
              std::string::npos)
        << bad;
}

}  // namespace
}  // namespace tz
