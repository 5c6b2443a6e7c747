// A model family is data: a second family registered by the test (tests/common/test_model_family.h:
// GPT-2's math under another name, FLOPs, Hugging Face names and one buffer more) is planned, allocated,
// trained, checkpointed, resumed and exported through the family interface, and trains bitwise like GPT-2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "model/safetensors_reader.h"
#include "tests/common/one_rank_run.h"
#include "tests/common/test_dir.h"
#include "tests/common/test_model_family.h"
#include "train/checkpoint_export.h"
#include "train/trainer.h"
#include "zero/memory_plan.h"
#include "zero/step_time.h"

namespace tz {
namespace {

TrainOptions test_family_run(int steps, const std::string& save_dir) {
  testing::register_test_family();
  TrainOptions o = testing::tiny_run(steps, save_dir);
  o.model = model_preset("test-tiny");
  o.model_name = "test-tiny";
  return o;
}

TEST(ModelFamilyAsData, ARegisteredSecondFamilyIsPlannedWithItsBuffersAndTrainsBitwiseLikeGpt2) {
  const TrainOptions gpt = testing::tiny_run(5, "");
  const TrainOptions other = test_family_run(5, "");
  ASSERT_EQ(other.model.family, testing::kTestFamily);

  const MemoryPlan pg = plan_memory(plan_inputs(gpt, 1, 0)), po = plan_memory(plan_inputs(other, 1, 0));
  EXPECT_EQ(po.total(Tier::device) - pg.total(Tier::device), testing::kTestScratchBytes);
  EXPECT_EQ(po.total(Tier::host), pg.total(Tier::host));
  // The step-time model counts the family's FLOPs, not GPT-2's.
  EXPECT_EQ(model_flops(other.model, 4, 64), 2 * model_flops(gpt.model, 4, 64));

  const TrainResult a = testing::run_one_rank(gpt);
  const TrainResult b = testing::run_one_rank(other);
  ASSERT_EQ(a.losses.size(), 5u);
  EXPECT_EQ(a.losses, b.losses);  // bitwise
  EXPECT_EQ(a.val_loss, b.val_loss);
  EXPECT_EQ(b.plan_bytes[Tier::device] - a.plan_bytes[Tier::device], testing::kTestScratchBytes);
  // What the device's allocator saw: the family's buffer was allocated, and taken (the run checks that
  // every planned buffer was).
  EXPECT_EQ(b.peak_bytes[Tier::device] - a.peak_bytes[Tier::device], testing::kTestScratchBytes);
  bool described = false;
  for (const std::string& line : testing::run_log())
    described |= line.rfind("model test-tiny: test-gpt, 2 layers, 4 heads, 64 wide", 0) == 0;
  EXPECT_TRUE(described) << "no start-up line with the family's description";
}

TEST(ModelFamilyAsData, ItsCheckpointNamesTheFamilyResumesExactlyAndExportsTheFamilysNames) {
  testing::TestDir d;
  TrainOptions straight = test_family_run(6, "");
  const TrainResult a = testing::run_one_rank(straight);

  TrainOptions first = test_family_run(3, d.file("ckpt"));
  const TrainResult b1 = testing::run_one_rank(first);
  ASSERT_EQ(b1.checkpoint, d.file("ckpt") + "/step-00000003");
  std::ifstream mf(b1.checkpoint + "/manifest.json");
  const nlohmann::json manifest = nlohmann::json::parse(mf);
  EXPECT_EQ(manifest.at("model").at("family"), testing::kTestFamily);

  // GPT-2 with the same shape is another model: refused, naming both.
  TrainOptions as_gpt = testing::tiny_run(6, d.file("ckpt"));
  as_gpt.resume = "latest";
  const std::string refusal = testing::run_error(as_gpt);
  EXPECT_NE(refusal.find("holds a model of test-gpt, 2 layers"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("this run's model is 2 layers"), std::string::npos) << refusal;

  TrainOptions second = test_family_run(6, d.file("ckpt"));
  second.resume = "latest";
  const TrainResult b2 = testing::run_one_rank(second);
  ASSERT_EQ(a.losses.size(), 6u);
  ASSERT_EQ(b2.losses.size(), 3u);
  for (int s = 0; s < 6; ++s)
    EXPECT_EQ(a.losses[s], s < 3 ? b1.losses[s] : b2.losses[s - 3]) << "step " << s + 1;

  EXPECT_NE(inspect_checkpoint(b1.checkpoint).find("model: test-gpt, 2 layers"), std::string::npos);
  export_checkpoint(b1.checkpoint, d.file("out.safetensors"), DType::f32);
  SafetensorsReader r(d.file("out.safetensors"));
  ASSERT_FALSE(r.tensors().empty());
  for (const auto& t : r.tensors()) EXPECT_EQ(t.name.rfind("test.transformer.", 0), 0u) << t.name;
}

}  // namespace
}  // namespace tz
