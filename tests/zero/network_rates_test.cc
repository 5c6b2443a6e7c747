// Tests the network rates between nodes (zero/hardware.h's NetworkRates, `bench calibrate --network`) in
// the step-time model: across nodes each collective goes no faster than the network's rate for it and
// waits the network's latency; inside one node they change nothing; the hardware file round-trips them and
// refuses bad ones by name. Exact arithmetic on a hand-made machine.
#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/common/error_message.h"
#include "zero/step_time.h"

namespace tz {
namespace {

Hardware two_rank_nodes() {
  Hardware h;
  h.name = "net";
  h.ranks_per_node = 1;
  h.step_tflops[0] = h.peak_tflops[0] = 1;
  h.device_gbs = 100, h.cpu_adam_gbs = 40, h.link_gbs = 10;
  h.intra_gbs = 20, h.inter_gbs = 5, h.latency_us = 10;
  h.reduce_scatter_gbs = 8, h.all_gather_gbs = 16, h.all_reduce_gbs = 12;
  return h;
}

MemoryPlan plan(int stage, int world) {
  PlanInputs in;
  in.model = model_preset("tiny");
  in.shape = ModelShape{4, 64};
  in.zero.stage = stage;
  in.zero.param_persistence_threshold = 0;
  in.world = world;
  return plan_memory(in);
}

double comm_s(const MemoryPlan& p, const Hardware& h) {
  for (const StepTerm& t : predict_step(p, h, 1).terms)
    if (t.what == "communication") return t.seconds;
  throw std::runtime_error("no communication term");
}

TEST(NetworkRates, AcrossNodesEachCollectiveGoesAtTheNetworksRateAndLatency) {
  Hardware h = two_rank_nodes();
  h.network = NetworkRates{2, 4, 3, 40, 2};  // reduce-scatter 2, all-gather 4, all-reduce 3 GB/s, 40 us
  // Stage 3 on 2 ranks of one node each: reduce-scatters and gathers at the network's rates (below the
  // node's), each waiting 40 us x log2(2).
  const MemoryPlan p3 = plan(3, 2);
  double want = 0;
  for (int l = 0; l < p3.buckets.launches(); ++l)
    want += 40e-6 + 0.5 * double(p3.buckets.stride[l]) * 2 * 4 / 2e9;
  for (int g = 0; g < p3.map.groups(); ++g)
    want += 2 * (40e-6 + 0.5 * double(p3.map.group(g).padded) * 4 / 4e9);
  EXPECT_NEAR(comm_s(p3, h), want, 1e-12);
  // Stage 0: the all-reduce at the network's 3 GB/s, not inter_gbs's 5.
  const MemoryPlan p0 = plan(0, 2);
  want = 0;
  for (int l = 0; l < p0.buckets.launches(); ++l) want += 40e-6 + double(p0.buckets.stride[l]) * 4 / 3e9;
  EXPECT_NEAR(comm_s(p0, h), want, 1e-12);
  // With one rank per node the node's own rates take no part: a network faster than them sets the rate.
  h.network = NetworkRates{50, 50, 50, 1, 2};
  want = 0;
  for (int l = 0; l < p0.buckets.launches(); ++l) want += 10e-6 + double(p0.buckets.stride[l]) * 4 / 50e9;
  EXPECT_NEAR(comm_s(p0, h), want, 1e-12) << "the larger latency, the network's rate";
  // Two ranks on each of two nodes: the node's rate bounds them too (12 GB/s all-reduce), 2 x log2(4)
  // latencies.
  h.ranks_per_node = 2;
  const MemoryPlan four = plan(0, 4);
  want = 0;
  for (int l = 0; l < four.buckets.launches(); ++l)
    want += 2 * 10e-6 + 2 * 3.0 / 4 * double(four.buckets.stride[l]) * 4 / 12e9;
  EXPECT_NEAR(comm_s(four, h), want, 1e-12);
  // A one-process calibration (no rates in the node) with a measured network plans one rank per node.
  h.ranks_per_node = 1;
  h.intra_gbs = h.reduce_scatter_gbs = h.all_gather_gbs = h.all_reduce_gbs = 0;
  h.network = NetworkRates{2, 4, 3, 40, 2};
  want = 0;
  for (int l = 0; l < p0.buckets.launches(); ++l) want += 40e-6 + double(p0.buckets.stride[l]) * 4 / 3e9;
  EXPECT_NEAR(comm_s(p0, h), want, 1e-12);
}

TEST(NetworkRates, InsideOneNodeTheNetworkChangesNothing) {
  Hardware h = two_rank_nodes();
  h.ranks_per_node = 2;
  const double without = comm_s(plan(2, 2), h);
  h.network = NetworkRates{0.5, 0.5, 0.5, 500, 2};
  EXPECT_DOUBLE_EQ(comm_s(plan(2, 2), h), without);
}

TEST(NetworkRates, HardwareFilesCarryThemAndRefuseBadOnes) {
  Hardware h = two_rank_nodes();
  h.network = NetworkRates{0.55, 1.34, 1.12, 72.6, 2};
  EXPECT_EQ(Hardware::from_json(h.to_json(), "x").network, h.network);
  nlohmann::json old = h.to_json();
  old.erase("network");
  EXPECT_EQ(Hardware::from_json(old, "x").network.nodes, 0) << "files from before it load, unmeasured";
  EXPECT_FALSE(Hardware{}.to_json().contains("network")) << "unmeasured: not written";
  auto refused = [&](const char* key, nlohmann::json v) {
    nlohmann::json j = h.to_json();
    j["network"][key] = v;
    return testing::error_message([&] { Hardware::from_json(j, "f.json"); });
  };
  EXPECT_NE(refused("nodes", 1).find("f.json: hardware field 'network.nodes' must be a number in [2, "),
            std::string::npos);
  EXPECT_NE(refused("nodes", 2.5).find("'network.nodes' must be a whole number"), std::string::npos);
  EXPECT_NE(refused("all_gather_gbs", 0).find("'network.all_gather_gbs' must be a number in [0.001, "),
            std::string::npos);
  EXPECT_NE(refused("latency_us", -1).find("'network.latency_us' must be a number in [0, "),
            std::string::npos);
  EXPECT_NE(refused("reduce_scatter_gbs", "fast").find("'network.reduce_scatter_gbs'"), std::string::npos);
  nlohmann::json j = h.to_json();
  j["network"] = 3;
  EXPECT_NE(
      testing::error_message([&] { Hardware::from_json(j, "f.json"); }).find("'network' must be an object"),
      std::string::npos);
}

}  // namespace
}  // namespace tz
