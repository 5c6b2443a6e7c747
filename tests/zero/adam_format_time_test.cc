// Tests the compressed states' update time in the step-time model (issue 36): the CPU Adam on int8 or bf16
// states takes the format's calibrated time per parameter over fp32's (hardware "cpu_adam_format_time",
// `bench calibrate`), fp32's time where the format was not calibrated (and the prediction says so), and the
// hardware file round-trips the times and refuses bad ones by name. Exact arithmetic on a hand-made machine.
#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/common/error_message.h"
#include "zero/step_time.h"

namespace tz {
namespace {

Hardware node() {
  Hardware h;
  h.name = "formats";
  h.ranks_per_node = 2;
  h.step_tflops[0] = h.peak_tflops[0] = 1;
  h.device_gbs = 100, h.cpu_adam_gbs = 40, h.link_gbs = 10;
  h.intra_gbs = h.inter_gbs = 20;
  return h;
}

PlanInputs host_states(MomentFormat states, MasterFormat master) {
  PlanInputs in;
  in.model = model_preset("tiny");
  in.shape = ModelShape{4, 64};
  in.zero.stage = 2;
  in.world = 2;
  in.offload.optimizer = Tier::host;
  in.offload.optimizer_states = states;
  in.offload.master_weights = master;
  return in;
}

const StepTerm& optimizer(const StepPrediction& p) {
  for (const StepTerm& t : p.terms)
    if (t.what == "optimizer") return t;
  throw std::runtime_error("no optimizer term");
}

// The fp32 CPU Adam's time for a plan's optimizer elements (int8 pads shards to whole blocks: each plan's
// own).
double fp32_time(const MemoryPlan& plan) {
  double opt = 0;
  for (const auto& g : plan.placement.groups) opt += double(g.opt_range.count);
  return opt * (28 + 4) / (40e9 / 2);  // the node's CPU Adam rate over 2 ranks
}

TEST(AdamFormatTime, CompressedStatesUpdateAtTheirCalibratedTimePerParameter) {
  Hardware h = node();
  h.cpu_adam_format_time = {{"int8/bf16-sr", 3.5}, {"bf16/fp32", 0.8}};
  const MemoryPlan fp32 = plan_memory(host_states(MomentFormat::fp32, MasterFormat::fp32));
  EXPECT_NEAR(optimizer(predict_step(fp32, h, 1)).seconds, fp32_time(fp32), 1e-15);
  const MemoryPlan int8 = plan_memory(host_states(MomentFormat::int8, MasterFormat::bf16_sr));
  const StepTerm t = optimizer(predict_step(int8, h, 1));
  EXPECT_NEAR(t.seconds, 3.5 * fp32_time(int8), 1e-15);
  EXPECT_NE(t.detail.find("states int8/bf16-sr at 3.50x fp32's time per parameter"), std::string::npos)
      << t.detail;
  const MemoryPlan bf16 = plan_memory(host_states(MomentFormat::bf16, MasterFormat::fp32));
  EXPECT_NEAR(optimizer(predict_step(bf16, h, 1)).seconds, 0.8 * fp32_time(bf16), 1e-15);
  // A format the hardware has no time for: fp32's, said.
  const MemoryPlan sr = plan_memory(host_states(MomentFormat::bf16, MasterFormat::bf16_sr));
  const StepTerm u = optimizer(predict_step(sr, h, 1));
  EXPECT_NEAR(u.seconds, fp32_time(sr), 1e-15);
  EXPECT_NE(u.detail.find("states bf16/bf16-sr at fp32's time per parameter (not calibrated"),
            std::string::npos);
}

TEST(AdamFormatTime, HardwareFilesCarryTheTimesAndRefuseBadOnes) {
  Hardware h = node();
  h.cpu_adam_format_time = {{"int8/bf16-sr", 3.45}, {"fp32/bf16-sr", 1.1}};
  EXPECT_EQ(Hardware::from_json(h.to_json(), "x").cpu_adam_format_time, h.cpu_adam_format_time);
  EXPECT_FALSE(node().to_json().contains("cpu_adam_format_time")) << "none measured: not written";
  auto refused = [&](const std::string& key, nlohmann::json v) {
    nlohmann::json j = h.to_json();
    j["cpu_adam_format_time"][key] = v;
    return testing::error_message([&] { Hardware::from_json(j, "f.json"); });
  };
  EXPECT_NE(refused("int8", 2).find(
                "f.json: hardware field 'cpu_adam_format_time' key 'int8' must be STATES/MASTER"),
            std::string::npos);
  EXPECT_NE(refused("int4/fp32", 2).find("key 'int4/fp32': "), std::string::npos);
  EXPECT_NE(refused("int8/bf16", 2).find("key 'int8/bf16': "), std::string::npos);
  EXPECT_NE(refused("int8/fp32", 0).find("'cpu_adam_format_time.int8/fp32' must be a number in [0.01, 1000]"),
            std::string::npos);
  EXPECT_NE(refused("int8/fp32", "slow").find("'cpu_adam_format_time.int8/fp32' must be a number"),
            std::string::npos);
  nlohmann::json j = h.to_json();
  j["cpu_adam_format_time"] = 3;
  EXPECT_NE(testing::error_message([&] {
              Hardware::from_json(j, "f.json");
            }).find("'cpu_adam_format_time' must be an object"),
            std::string::npos);
}

}  // namespace
}  // namespace tz
