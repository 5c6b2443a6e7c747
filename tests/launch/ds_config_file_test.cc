// Tests launch/ds_config.h's file reading: the tutorial-shaped configs the launch tests train with load
// key by key, and a missing file, a device, a FIFO, an oversized file, malformed JSON and repeated keys
// fail naming the path.
#include "launch/ds_config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "core/error.h"
#include "tests/common/test_dir.h"

namespace tz {
namespace {

const FlagGiven kNoFlags = [](const std::string&) { return false; };

std::string load_error(const std::string& path) {
  TrainOptions o;
  try {
    load_ds_config(path, o, kNoFlags);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// The files the launch_ds_config_* tests train with, read here key by key.
TEST(DsConfig, TheTutorialShapedConfigsLoadUnchanged) {
  const char* src = std::getenv("TZ_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "ctest sets TZ_SOURCE_DIR";
  const std::string dir = std::string(src) + "/tests/launch/ds_configs/";
  TrainOptions z2;
  load_ds_config(dir + "hf_zero2_auto.json", z2, kNoFlags);
  EXPECT_EQ(z2.zero.stage, 2);
  EXPECT_EQ(z2.offload.optimizer, Tier::host);
  EXPECT_EQ(z2.zero.reduce_bucket_size, 200'000'000u);
  EXPECT_EQ(z2.lr.schedule, LrSchedule::warmup);
  EXPECT_EQ(z2.log_every, 2000);
  EXPECT_EQ(z2.train_batch_size, 0);

  TrainOptions z3;
  z3.model.n_embd = 64;  // --model tiny
  load_ds_config(dir + "hf_zero3_cpu_offload.json", z3, kNoFlags);
  EXPECT_EQ(z3.zero.stage, 3);
  EXPECT_EQ(z3.offload.param, Tier::host);
  EXPECT_EQ(z3.offload.sub_group_size, 100'000'000'000'000u);  // 1e14
  EXPECT_EQ(z3.zero.reduce_bucket_size, 4096u);
  EXPECT_EQ(z3.zero.prefetch_bucket_size, 3686u);
  EXPECT_EQ(z3.zero.param_persistence_threshold, 640u);

  TrainOptions nv;
  load_ds_config(dir + "zero3_nvme_aio.json", nv, kNoFlags);
  EXPECT_EQ(nv.offload.optimizer, Tier::nvme);
  EXPECT_EQ(nv.offload.param, Tier::nvme);
  EXPECT_EQ(nv.offload.nvme_paths, std::vector<std::string>{"/local_nvme"});
  EXPECT_EQ(nv.offload.aio_block_size, 262144u);
  EXPECT_EQ(nv.offload.aio_queue_depth, 32);
  TrainOptions nv_flag;
  nv_flag.offload.nvme_paths = {"/tmp/store"};  // --nvme-path replaces the file's paths
  load_ds_config(dir + "zero3_nvme_aio.json", nv_flag, [](const std::string& f) { return f == "nvme-path"; });
  EXPECT_EQ(nv_flag.offload.nvme_paths, std::vector<std::string>{"/tmp/store"});

  TrainOptions z1;
  load_ds_config(dir + "zero1_warmup_decay.json", z1, kNoFlags);
  EXPECT_EQ(z1.zero.stage, 1);
  EXPECT_EQ(z1.dtype, DType::bf16);
  EXPECT_EQ(z1.train_batch_size, 16);
  EXPECT_EQ(z1.lr.schedule, LrSchedule::warmup_decay);
  EXPECT_EQ(z1.lr.warmup_type, WarmupType::linear);
  EXPECT_EQ(z1.lr.warmup, 2);
  EXPECT_EQ(z1.lr.total_num_steps, 4);
  EXPECT_FLOAT_EQ(z1.lr.lr, 1e-3f);
  EXPECT_FLOAT_EQ(z1.adam.beta1, 0.8f);
}

TEST(DsConfig, MissingFileFailsNamingThePath) {
  testing::TestDir dir;
  std::string path = dir.file("nope.json");
  std::string e = load_error(path);
  EXPECT_TRUE(has(e, "cannot open DeepSpeed config (--config) '" + path + "'")) << e;
  EXPECT_TRUE(has(e, "No such file")) << e;
  e = load_error(dir.path());
  EXPECT_TRUE(has(e, "is not a regular file (a directory)")) << e;
}

// Hostile inputs are refused before any read: /dev/zero would be read until memory runs out, a FIFO
// would block forever, and an oversized file is not a config.
TEST(DsConfig, ADeviceAFifoAndAnOversizedFileAreRefusedNamingThePath) {
  testing::TestDir dir;
  std::string e = load_error("/dev/zero");
  EXPECT_TRUE(has(e, "'/dev/zero' is not a regular file (a character device)")) << e;
  const std::string fifo = dir.file("cfg.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  e = load_error(fifo);  // returns at once: no writer is ever opened
  EXPECT_TRUE(has(e, "'" + fifo + "' is not a regular file (a FIFO)")) << e;
  const std::string big = dir.file("big.json");
  write(big, "{\"x\": \"" + std::string(kMaxConfigBytes, 'a') + "\"}");
  e = load_error(big);
  EXPECT_TRUE(has(e, big + "' is " + std::to_string(kMaxConfigBytes + 9) + " bytes, more than the")) << e;
  // A symlink to a real config is fine (it names a regular file).
  const std::string real = dir.file("real.json"), link = dir.file("link.json");
  write(real, R"({"train_micro_batch_size_per_gpu": 3})");
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  TrainOptions o;
  load_ds_config(link, o, kNoFlags);
  EXPECT_EQ(o.micro_batch, 3);
}

TEST(DsConfig, MalformedJsonFailsWithThePathAndPosition) {
  testing::TestDir dir;
  std::string path = dir.file("bad.json");
  write(path, "{\n  \"train_batch_size\": 8,\n  \"gradient_clipping\": 1.0,\n}\n");  // trailing comma
  std::string e = load_error(path);
  EXPECT_TRUE(has(e, path + " is not valid JSON: parse error at line 4, column 1")) << e;
  write(path, "");
  e = load_error(path);
  EXPECT_TRUE(has(e, path + " is not valid JSON")) << e;
}

TEST(DsConfig, RepeatedKeyFailsAsInDeepSpeed) {
  testing::TestDir dir;
  std::string path = dir.file("dup.json");
  write(path, R"({"zero_optimization": {"stage": 1, "reduce_bucket_size": 5, "stage": 2}, "optimizer": {}})");
  std::string e = load_error(path);
  EXPECT_TRUE(has(e, path + ": key 'zero_optimization.stage' is given twice")) << e;
  // The same key in two different objects is fine.
  write(path, R"({"fp16": {"enabled": false}, "bf16": {"enabled": true}})");
  EXPECT_EQ(load_error(path), "");
}

TEST(DsConfig, LoadedFileErrorsNameThePath) {
  testing::TestDir dir;
  std::string path = dir.file("cfg.json");
  write(path, R"({"zero_optimisation": {"stage": 2}})");
  std::string e = load_error(path);
  EXPECT_TRUE(has(e, "unknown key 'zero_optimisation' in " + path + "; did you mean 'zero_optimization'?"))
      << e;
}

}  // namespace
}  // namespace tz
