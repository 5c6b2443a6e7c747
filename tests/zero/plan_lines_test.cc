// The memory plan's lines outside its buffers (zero/plan_lines.cc, docs/planning.md#outside-the-buffers):
// each line's bytes from the plan's inputs and the hardware file's measurements, exactly, and what the
// plan holds on a tier is its buffers plus the lines there.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "comm/communicator.h"
#include "model/model_config.h"
#include "model/model_family.h"
#include "zero/memory_plan.h"

namespace tz {
namespace {

PlanInputs gpt_tiny(int stage, int world) {
  PlanInputs in;
  in.device = DeviceKind::cpu;
  in.model = model_preset("tiny");
  in.shape = {4, 64};
  in.zero.stage = stage;
  in.world = world;
  in.data_bytes = 12345;
  return in;
}

std::map<std::string, PlanLine> lines(const MemoryPlan& p) {
  std::map<std::string, PlanLine> m;
  for (const PlanLine& l : p.outside) EXPECT_TRUE(m.emplace(l.what, l).second) << "twice: " << l.what;
  return m;
}

MemoryLines measured() {
  MemoryLines m;
  m.comm_piece_bytes = 64 << 10;  // the tiny model's reductions are a few hundred KiB
  m.add_comm(2, 10 << 20);
  m.add_comm(4, 18 << 20);
  m.libraries = 4 << 20;
  m.products = 16;
  return m;
}

std::size_t largest_reduction(const MemoryPlan& p) {
  std::size_t largest = 0;
  for (int l = 0; l < p.buckets.launches(); ++l)
    largest = std::max(largest, p.buckets.stride[l] * (p.buckets.reduce_scatter ? std::size_t(p.in.world) : 1) * 4);
  return largest;
}

TEST(PlanLines, OneRankHoldsTheDataLoaderAndTheLibrariesScaledToItsProducts) {
  PlanInputs in = gpt_tiny(0, 1);
  MemoryPlan p = plan_memory(in);
  auto m = lines(p);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m["data loader"].bytes, 12345u);
  EXPECT_EQ(m["libraries"].bytes, 0u);
  EXPECT_NE(m["libraries"].source.find("not measured"), std::string::npos) << m["libraries"].source;
  in.measured = measured();
  p = plan_memory(in);
  m = lines(p);
  const std::size_t products = model_family(in.model).gemm_shapes(in.model, in.shape, in.precision().act).size();
  ASSERT_GT(products, 0u);
  EXPECT_EQ(m["libraries"].bytes, std::size_t(double(4 << 20) * double(products) / 16));
  EXPECT_EQ(p.held(Tier::host), p.total(Tier::host) + 12345 + m["libraries"].bytes);
  EXPECT_EQ(p.held(Tier::device), p.total(Tier::device));
  // The heap the line was measured with is named; a file without one is told to recalibrate.
  EXPECT_NE(m["libraries"].source.find("not recorded"), std::string::npos) << m["libraries"].source;
  in.measured.heap = "tcmalloc";
  m = lines(plan_memory(in));
  EXPECT_NE(m["libraries"].source.find("; measured with the tcmalloc heap"), std::string::npos) << m["libraries"].source;
  EXPECT_EQ(m["libraries"].source.find("not recorded"), std::string::npos) << m["libraries"].source;
}

TEST(PlanLines, CommunicationAtTheMeasuredPieceAndWorldSizeIsTheMeasurementPlusTheStaging) {
  for (int world : {2, 3, 4}) {
    SCOPED_TRACE(world);
    PlanInputs in = gpt_tiny(2, world);
    in.zero.comm_piece_bytes = 64 << 10;
    in.measured = measured();
    const MemoryPlan p = plan_memory(in);
    ASSERT_GT(largest_reduction(p), in.zero.comm_piece_bytes) << "the test needs a reduction of several pieces";
    auto m = lines(p);
    EXPECT_EQ(m["communication staging"].bytes, comm_staging_bytes(64 << 10));
    const std::size_t expect = world == 2 ? 10 << 20 : world == 4 ? 18 << 20 : 14 << 20;  // 3: on the line
    EXPECT_EQ(m["communication temporaries"].bytes, expect);
    std::size_t sum = 0;
    for (const auto& [what, l] : m) sum += l.tier == Tier::host ? l.bytes : 0;
    EXPECT_EQ(p.held(Tier::host), p.total(Tier::host) + sum);
  }
}

// Pieces of another size move libnbc's part: twice a piece for each of the pieces in flight.
TEST(PlanLines, AnotherPieceSizeMovesTheTemporariesByTwicePerPieceInFlight) {
  PlanInputs in = gpt_tiny(2, 2);
  in.measured = measured();
  in.zero.comm_piece_bytes = 128 << 10;
  MemoryPlan p = plan_memory(in);
  ASSERT_GT(largest_reduction(p), std::size_t(128) << 10);
  EXPECT_EQ(lines(p)["communication temporaries"].bytes,
            std::size_t(double(10 << 20) + 2.0 * kReducingPiecesInFlight * double(64 << 10)));
  in.zero.comm_piece_bytes = 1 << 30;  // larger than any reduction: the largest one's size counts
  p = plan_memory(in);
  EXPECT_EQ(lines(p)["communication temporaries"].bytes,
            std::size_t(double(10 << 20) + 2.0 * kReducingPiecesInFlight * (double(largest_reduction(p)) - double(64 << 10))));
  // Whole reductions (pieces of 0): derived from libnbc, twice the largest reduce-scatter's message.
  in.zero.comm_piece_bytes = 0;
  p = plan_memory(in);
  auto m = lines(p);
  EXPECT_EQ(m["communication temporaries"].bytes, 2 * largest_reduction(p));
  EXPECT_EQ(m.count("communication staging"), 0u);
}

// Across nodes the network transport's temporaries, measured one rank per node, stand for the shared-memory
// transport's; with several ranks on each node, both (an upper bound); not measured between nodes: the
// node's figure at the world size, said so.
TEST(PlanLines, AcrossNodesTheTemporariesMeasuredBetweenNodesAreHeld) {
  PlanInputs in = gpt_tiny(2, 2);
  in.zero.comm_piece_bytes = 64 << 10;
  in.measured = measured();
  in.measured.comm_between_nodes = 3 << 20;
  auto line = [&](int world, int per_node) {
    in.world = world;
    in.ranks_per_node = per_node;
    const MemoryPlan p = plan_memory(in);
    EXPECT_GT(largest_reduction(p), in.zero.comm_piece_bytes)
        << "the test needs a reduction of several pieces";
    return lines(p)["communication temporaries"];
  };
  // One node (ranks per node unknown, or as many as the world): the node's measurement.
  EXPECT_EQ(line(2, 0).bytes, std::size_t(10) << 20);
  EXPECT_EQ(line(2, 2).bytes, std::size_t(10) << 20);
  EXPECT_EQ(line(4, 8).bytes, std::size_t(18) << 20);
  // Two nodes of one rank: the figure between nodes alone.
  PlanLine l = line(2, 1);
  EXPECT_EQ(l.bytes, std::size_t(3) << 20);
  EXPECT_NE(l.source.find("between nodes (bench calibrate --network, one rank per node)"), std::string::npos)
      << l.source;
  EXPECT_EQ(line(4, 1).bytes, std::size_t(3) << 20);
  // Two nodes of two ranks: between nodes plus the node's at 2 ranks.
  l = line(4, 2);
  EXPECT_EQ(l.bytes, std::size_t(13) << 20);
  EXPECT_NE(l.source.find("plus 10.00 MiB in a node (measured at 2 ranks"), std::string::npos) << l.source;
  // Not measured between nodes: the node's figure at the world size, and the plan says what to run.
  in.measured.comm_between_nodes = -1;
  l = line(4, 2);
  EXPECT_EQ(l.bytes, std::size_t(18) << 20);
  EXPECT_NE(l.source.find("between nodes not measured (`tierzero bench calibrate --network`)"),
            std::string::npos)
      << l.source;
  EXPECT_EQ(line(4, 4).source.find("between nodes"), std::string::npos);
}

TEST(PlanLines, NcclBuffersAreADerivedDeviceLineAtTwoRanksOrMore) {
  PlanInputs in = gpt_tiny(2, 1);
  in.device = DeviceKind::cuda;
  EXPECT_EQ(lines(plan_memory(in)).count("nccl buffers"), 0u);
  in.world = 2;
  const MemoryPlan p = plan_memory(in);
  auto m = lines(p);
  ASSERT_EQ(m.count("nccl buffers"), 1u);
  EXPECT_EQ(m["nccl buffers"].tier, Tier::device);
  EXPECT_EQ(m["nccl buffers"].bytes, std::size_t(256) << 20);
  EXPECT_NE(m["nccl buffers"].source.find("derived from NCCL's documentation"), std::string::npos);
  EXPECT_EQ(m.count("communication temporaries") + m.count("libraries"), 0u);  // the host's collectives only
  EXPECT_EQ(p.held(Tier::device), p.total(Tier::device) + (std::size_t(256) << 20));
}

}  // namespace
}  // namespace tz
