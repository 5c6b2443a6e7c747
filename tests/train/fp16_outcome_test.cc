// Tests the end of an fp16 run (train/trainer.cc, check_fp16_outcome): a run whose last loss is not
// finite, after steps that were applied, ends with an error before its final checkpoint and model are
// written, and nothing of either is left behind. (A run whose every step was skipped is tried through
// the binary: launch_train_fp16_every_step_skipped_*.)
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "tests/common/one_rank_run.h"
#include "tests/common/test_dir.h"

namespace tz {
namespace {

namespace fs = std::filesystem;

TEST(Fp16Outcome, ALastLossThatIsNotFiniteWritesNoCheckpointAndNoModel) {
  testing::TestDir d;
  TrainOptions o = testing::tiny_run(4, d.file("ckpt"));
  o.dtype = DType::f16;
  o.val_batches = 1;
  o.save_safetensors = d.file("model.safetensors");
  TrainHooks hooks;
  // Before step 3's update, the embedding's master weights become 1e30: the update applies (its
  // gradients are finite), and the fp16 working weights of step 4 are infinite, so its loss is not.
  hooks.before_step = [](int s, Engine& e) {
    if (s != 3) return;
    e.visit_states(
        [](int g, std::size_t, std::size_t n, float* master, float*, float*) {
          if (g == 0) std::fill(master, master + n, 1e30f);
        },
        StateWrite::exact);
  };
  std::string m;
  try {
    testing::run_one_rank(o, hooks);
  } catch (const Error& e) {
    m = e.what();
  }
  EXPECT_NE(m.find("at step 4, the last (fp16): training diverged and the final checkpoint and " +
                   o.save_safetensors + " were not written"),
            std::string::npos)
      << m;
  for (const std::string& line : testing::run_log())
    EXPECT_EQ(line.find("step 3 skipped"), std::string::npos) << "step 3's update was applied: " << line;
  EXPECT_FALSE(fs::exists(o.save_safetensors));
  for (const auto& e : fs::directory_iterator(o.save_dir))
    EXPECT_EQ(e.path().filename(), ".tierzero.lock") << "no checkpoint or temporary folder is left";
}

}  // namespace
}  // namespace tz
