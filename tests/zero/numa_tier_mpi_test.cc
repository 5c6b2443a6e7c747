// The numa:N tier (zero/numa_tier.h): the optimizer states and stage 3's parameter shards on NUMA node 0's
// memory (the node every machine has) train bitwise like the host tier at stages 1-3, with the
// speculative CPU Adam too, at 1 and 2 ranks, and in compressed formats; the kernel (move_pages) finds
// every page checked on node 0; a budget one byte short is refused naming the tier and its flag, and a node
// this machine lacks naming the node. The same check with states on a second, memory-only node runs under
// qemu (perf/scripts/numa_qemu.sh).
#include <gtest/gtest.h>

#include <regex>

#include "comm/communicator.h"
#include "core/numa.h"
#include "tests/common/error_message.h"
#include "tests/common/tier_runs.h"
#include "train/trainer.h"
#include "zero/memory_plan.h"
#include "zero/numa_tier.h"

namespace tz {
namespace {

using testing::offloaded;
using testing::quiet;
TrainOptions tiny(int stage) { return testing::tiny_tier_run(stage, 6); }

#define SKIP_WITHOUT_NUMA()                                                    \
  do {                                                                         \
    std::string why;                                                           \
    if (numa_nodes(&why).empty()) GTEST_SKIP() << "no NUMA node here: " << why; \
  } while (0)

TEST(NumaTier, Node0TrainsBitwiseLikeTheHostTierAtStages1To3AndItsPagesAreOnNode0) {
  SKIP_WITHOUT_NUMA();
  const Tier n0 = numa_tier(0);  // before the runs make their devices
  auto comm = make_mpi_world();
  for (int stage = 1; stage <= 3; ++stage)
    for (OptimizerOverlap overlap : {OptimizerOverlap::off, OptimizerOverlap::on}) {
      SCOPED_TRACE("stage " + std::to_string(stage) + ", overlap " + optimizer_overlap_name(overlap));
      TrainOptions base = tiny(stage);
      base.offload.overlap_optimizer = overlap;
      const TrainResult host = train(offloaded(base, Tier::host), *comm, quiet);
      std::vector<std::string> lines;
      const TrainResult numa = train(offloaded(base, n0), *comm, [&](const std::string& s) { lines.push_back(s); });
      testing::expect_like_the_host_tier(host, numa, n0, 6);
      if (comm->rank() != 0) continue;  // rank 0 logs
      // "rank 0's numa:0: 1.39 MiB in 12 buffers, 357 of 357 pages checked on node 0 (move_pages)"
      const std::regex line(R"(rank 0's numa:0: [0-9.]+ [KMG]?i?B in [0-9]+ buffers, ([0-9]+) of ([0-9]+) pages checked on node 0 \(move_pages\))");
      int found = 0;
      for (const std::string& s : lines) {
        std::smatch m;
        if (!std::regex_match(s, m, line)) continue;
        ++found;
        EXPECT_EQ(m[1], m[2]) << s;
        EXPECT_GT(std::stoul(m[1]), 0u) << s;
      }
      EXPECT_EQ(found, 1);
    }
}

// Compressed optimizer states (issue 36) on node 0: the host tier's losses bit for bit, their bytes on the
// node.
TEST(NumaTier, CompressedStatesOnNode0TrainBitwiseLikeTheHostTier) {
  SKIP_WITHOUT_NUMA();
  const Tier n0 = numa_tier(0);
  auto comm = make_mpi_world();
  for (int stage : {1, 3}) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    TrainOptions base = tiny(stage);
    base.offload.optimizer_states = MomentFormat::int8;
    base.offload.master_weights = MasterFormat::bf16_sr;
    const TrainResult host = train(offloaded(base, Tier::host), *comm, quiet);
    const TrainResult numa = train(offloaded(base, n0), *comm, quiet);
    testing::expect_like_the_host_tier(host, numa, n0, 6);
  }
}

TEST(NumaTier, ABudgetOneByteShortIsRefusedNamingTheTierAndItsFlag) {
  SKIP_WITHOUT_NUMA();
  const Tier n0 = numa_tier(0);
  auto comm = make_mpi_world();
  const std::string m = testing::one_byte_short_error(n0, *comm);
  EXPECT_NE(m.find("out of numa:0 memory budget"), std::string::npos) << m;
  EXPECT_NE(m.find("short by 1 B"), std::string::npos) << m;
  EXPECT_NE(m.find("--numa-mem 0=SIZE"), std::string::npos) << m;
}

TEST(NumaTier, ANodeThisMachineLacksIsRefusedNamingIt) {
  SKIP_WITHOUT_NUMA();
  std::vector<int> ids;
  for (const NumaNode& n : numa_nodes()) ids.push_back(n.id);
  const int missing = ids.back() + 1;
  const Tier t = numa_tier(missing);
  auto comm = make_mpi_world();
  const std::string m = testing::error_message([&] { train(offloaded(tiny(2), t), *comm, quiet); });
  EXPECT_NE(m.find("numa:" + std::to_string(missing) + " tier"), std::string::npos) << m;
  EXPECT_NE(m.find("NUMA node " + std::to_string(missing) + " has no memory"), std::string::npos) << m;
  EXPECT_NE(m.find("tierzero doctor"), std::string::npos) << m;
}

}  // namespace
}  // namespace tz
