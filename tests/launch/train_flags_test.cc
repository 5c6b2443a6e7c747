// The training flags' resolution: --nvme-path given twice in any spelling, DeepSpeed's batch-size rule at
// any world size, and the ZeRO sizes DeepSpeed accepts as 0.
#include "launch/train_flags.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "launch/parse_args.h"
#include "tests/common/error_message.h"
#include "tests/common/test_dir.h"
#include "train/trainer.h"
#include "zero/memory_plan.h"

namespace tz {
namespace {

namespace po = boost::program_options;
using testing::error_message;

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

TrainOptions resolve(const std::vector<std::string>& args) {
  TrainFlags f;
  po::options_description desc;
  add_train_flags(desc, f);
  po::variables_map vm;
  parse_args(args, desc, vm, "train");
  resolve_train_flags(f, vm);
  return f.o;
}

std::string config(const testing::TestDir& dir, const std::string& text) {
  const std::string path = dir.file("ds.json");
  std::ofstream(path) << text;
  return path;
}

TEST(TrainFlags, TheSameNvmePathTwiceIsRefusedInAnySpelling) {
  testing::TestDir dir;
  const std::string a = dir.file("a"), b = dir.file("b"), link = dir.file("link");
  std::filesystem::create_directory(a);
  std::filesystem::create_directory(b);
  std::filesystem::create_directory_symlink(a, link);
  EXPECT_EQ(resolve({"--nvme-path", a, "--nvme-path", b}).offload.nvme_paths.size(), 2u);
  for (const std::string& again : {a, a + "/", link, link + "/", b + "/../a", a + "/."}) {
    const std::string e = error_message([&] { resolve({"--nvme-path", a, "--nvme-path", again}); });
    EXPECT_TRUE(has(e, "--nvme-path '" + again + "' is given twice: it is the same folder as --nvme-path '" + a +
                           "'"))
        << e;
  }
  // A folder not made yet, spelt twice.
  const std::string fresh = dir.file("new");
  EXPECT_TRUE(has(error_message([&] { resolve({"--nvme-path", fresh, "--nvme-path", fresh + "/"}); }),
                  "is given twice"));
}

TEST(TrainFlags, TrainBatchSizeWithoutAccumulationDerivesItAtEachWorldSize) {
  testing::TestDir dir;
  const std::string cfg = config(dir, R"({"train_batch_size": 48, "train_micro_batch_size_per_gpu": 2})");
  for (const auto& [world, accum] : std::vector<std::pair<int, int>>{{1, 24}, {2, 12}, {3, 8}, {8, 3}, {24, 1}}) {
    TrainOptions o = resolve({"--config", cfg});
    EXPECT_EQ(o.grad_accum, 0);  // left for derive_batch: the world is not known yet
    derive_batch(o, world);
    EXPECT_EQ(o.grad_accum, accum) << "world " << world;
    EXPECT_EQ(o.micro_batch, 2);
  }
  TrainOptions o = resolve({"--config", cfg});
  std::string e = error_message([&] { derive_batch(o, 5); });
  EXPECT_TRUE(has(e, cfg + ": train_batch_size 48 is not a multiple of micro batch x ranks = 10 at 5 rank(s)")) << e;
  // --micro-batch given on the command line counts as given: the accumulation is derived from it.
  o = resolve({"--config", cfg, "--micro-batch", "4"});
  derive_batch(o, 2);
  EXPECT_EQ(o.grad_accum, 6);
  // The accumulation given, the micro batch left out: the micro batch is derived.
  o = resolve({"--config", config(dir, R"({"train_batch_size": 48, "gradient_accumulation_steps": 3})")});
  derive_batch(o, 4);
  EXPECT_EQ(o.micro_batch, 4);
  EXPECT_EQ(o.grad_accum, 3);
  // Only train_batch_size: one micro-step, the micro batch train_batch_size / world.
  o = resolve({"--config", config(dir, R"({"train_batch_size": 48})")});
  derive_batch(o, 6);
  EXPECT_EQ(o.micro_batch, 8);
  EXPECT_EQ(o.grad_accum, 1);
  // All three given: checked, not derived.
  o = resolve({"--config", config(dir, R"({"train_batch_size": 48, "train_micro_batch_size_per_gpu": 2,
                                          "gradient_accumulation_steps": 3})")});
  e = error_message([&] { derive_batch(o, 4); });
  EXPECT_TRUE(has(e, "train_batch_size 48 must equal train_micro_batch_size_per_gpu (2) x "
                     "gradient_accumulation_steps (3) x ranks (4) = 24"))
      << e;
  derive_batch(o, 8);
  EXPECT_EQ(o.grad_accum, 3);
}

// DeepSpeed accepts each of these as 0 (docs/configuration.md): a bucket of 0 reduces or gathers each
// flat group on its own, a prefetch of 0 prefetches nothing, a persistence threshold of 0 keeps nothing
// whole, a live-parameter limit of 0 keeps no gathered group past its use, clipping 0 is off.
TEST(TrainFlags, ZeroSizesThatDeepSpeedAcceptsMeanWhatTheyMeanThere) {
  testing::TestDir dir;
  const std::string cfg = config(dir, R"({"gradient_clipping": 0, "zero_optimization": {"stage": 3,
      "reduce_bucket_size": 0, "allgather_bucket_size": 0, "stage3_prefetch_bucket_size": 0,
      "stage3_max_live_parameters": 0, "stage3_param_persistence_threshold": 0}})");
  TrainOptions o = resolve({"--config", cfg});
  EXPECT_EQ(o.adam.grad_clip, 0.0f);
  EXPECT_EQ(o.zero.reduce_bucket_size, 0u);
  EXPECT_EQ(o.zero.allgather_bucket_size, 0u);
  EXPECT_EQ(o.zero.prefetch_bucket_size, 0u);
  EXPECT_EQ(o.zero.max_live_parameters, 0u);
  EXPECT_EQ(o.zero.param_persistence_threshold, 0u);
  for (int stage : {1, 2, 3}) {
    o.zero.stage = stage;
    const MemoryPlan p = plan_memory(plan_inputs(o, 2, 1));
    // One flat group per reduction: the bucket of 0 holds the largest group alone.
    EXPECT_EQ(p.buckets.launches(), p.map.groups()) << "stage " << stage;
  }
  // The same from the flags.
  o = resolve({"--reduce-bucket-size", "0", "--allgather-bucket-size", "0", "--zero-stage", "2"});
  EXPECT_EQ(plan_memory(plan_inputs(o, 2, 0)).buckets.launches(), plan_memory(plan_inputs(o, 2, 0)).map.groups());
}

// DeepSpeed's sub_group_size of 0 makes every parameter a sub-group of its own: the smallest there is.
// Here it is the smallest sub-group the NVMe pipeline has, one aio block's elements (fp32 states on a
// block boundary in 2-byte shards: block / 2 elements).
TEST(TrainFlags, ASubGroupSizeOfZeroIsTheSmallestSubGroup) {
  testing::TestDir dir;
  const std::string cfg = config(dir, R"({"zero_optimization": {"stage": 3, "sub_group_size": 0,
      "offload_optimizer": {"device": "nvme", "nvme_path": "/tmp"}}})");
  TrainOptions o = resolve({"--config", cfg});
  EXPECT_EQ(o.offload.sub_group_size, 0u);
  const MemoryPlan p = plan_memory(plan_inputs(o, 2, 0));
  EXPECT_EQ(p.optimizer_swap.chunk, o.offload.aio_block_size / 2);
  EXPECT_EQ(p.update_chunk, o.offload.aio_block_size / 2);
}

}  // namespace
}  // namespace tz
