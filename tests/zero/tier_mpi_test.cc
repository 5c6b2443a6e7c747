// A tier is data: a fourth tier registered by the test (tests/common/second_host_tier.h: host memory under
// another name and budget, from a pool of its own) takes the optimizer states and stage 3's parameter
// shards, trains bitwise like the host tier at stages 1-3 (with the speculative CPU Adam too), and its
// bytes are what its own allocator saw, not the host tier's; a budget one byte short is refused naming it.
#include <gtest/gtest.h>

#include "comm/communicator.h"
#include "tests/common/error_message.h"
#include "tests/common/second_host_tier.h"
#include "tests/common/tier_runs.h"
#include "train/trainer.h"
#include "zero/memory_plan.h"

namespace tz {
namespace {

using testing::offloaded;
using testing::quiet;
TrainOptions tiny(int stage) { return testing::tiny_tier_run(stage, 8); }

TEST(SecondHostTier, TrainsBitwiseLikeTheHostTierAtStages1To3WithItsBytesInItsOwnAllocator) {
  const Tier t2 = testing::second_host_tier();  // before the runs make their devices
  auto comm = make_mpi_world();
  for (int stage = 1; stage <= 3; ++stage)
    for (OptimizerOverlap overlap : {OptimizerOverlap::off, OptimizerOverlap::on}) {
      SCOPED_TRACE("stage " + std::to_string(stage) + ", overlap " + optimizer_overlap_name(overlap));
      TrainOptions base = tiny(stage);
      base.offload.overlap_optimizer = overlap;
      const TrainResult host = train(offloaded(base, Tier::host), *comm, quiet);
      const TrainResult other = train(offloaded(base, t2), *comm, quiet);
      testing::expect_like_the_host_tier(host, other, t2, 8);
    }
}

TEST(SecondHostTier, ABudgetOneByteShortIsRefusedNamingTheTierAndItsFlag) {
  const Tier t2 = testing::second_host_tier();
  auto comm = make_mpi_world();
  const std::string m = testing::one_byte_short_error(t2, *comm);
  EXPECT_NE(m.find("out of host2 memory budget"), std::string::npos) << m;
  EXPECT_NE(m.find("short by 1 B"), std::string::npos) << m;
  EXPECT_NE(m.find("--host2-mem"), std::string::npos) << m;
}

}  // namespace
}  // namespace tz
