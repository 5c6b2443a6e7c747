// Training checkpoints on one rank: a resumed run is bitwise the run that never stopped (fp32, bf16
// with offload, fp16 with its loss scaler), a crash at any phase of a save leaves the previous
// checkpoint loadable, --keep-last prunes, and damaged or mismatched checkpoints are refused by name.
#include "train/checkpoint.h"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "tests/common/one_rank_run.h"
#include "tests/common/test_dir.h"
#include "train/trainer.h"

namespace tz {
namespace {

namespace fs = std::filesystem;

TrainOptions tiny(int steps, const std::string& save_dir) { return testing::tiny_run(steps, save_dir); }

TrainResult run(const TrainOptions& o, const TrainHooks& hooks = {}) { return testing::run_one_rank(o, hooks); }

std::string bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

bool logged(const std::string& part) {
  for (const auto& l : testing::run_log())
    if (l.find(part) != std::string::npos) return true;
  return false;
}

std::string error_of(const TrainOptions& o) { return testing::run_error(o); }

struct Variant {
  const char* name;
  DType dtype;
  int stage;
  Tier optimizer;
  const char* model = "tiny";
};

class ResumeIsExact : public ::testing::TestWithParam<Variant> {};

// 20 steps straight against 10 steps, a stop, and a resumed run to 20: the same 20 losses and the same
// final weights, bit for bit (the exported safetensors files are byte-identical).
TEST_P(ResumeIsExact, TenStepsThenResumeTo20EqualsTwentyStepsStraight) {
  const Variant v = GetParam();
  testing::TestDir d;
  auto setup = [&](TrainOptions o) {
    o.model = model_preset(v.model);
    o.model_name = v.model;
    o.dtype = v.dtype;
    o.zero.stage = v.stage;
    o.offload.optimizer = v.optimizer;
    if (v.optimizer == Tier::nvme) o.offload.nvme_paths = {d.path()};
    if (v.dtype == DType::f16) o.fp16.initial_scale_power = 24, o.fp16.loss_scale_window = 4;  // overflows early
    return o;
  };
  TrainOptions straight = setup(tiny(20, ""));
  straight.save_safetensors = d.file("straight.safetensors");
  const TrainResult a = run(straight);

  TrainOptions first = setup(tiny(10, d.file("ckpt")));
  first.save_every = 4;
  const TrainResult b1 = run(first);
  EXPECT_EQ(b1.checkpoint, d.file("ckpt") + "/step-00000010");
  TrainOptions second = setup(tiny(20, d.file("ckpt")));
  second.resume = "latest";
  second.save_safetensors = d.file("resumed.safetensors");
  const TrainResult b2 = run(second);
  EXPECT_TRUE(logged("resuming from " + d.file("ckpt") + "/step-00000010 (step 10"));

  ASSERT_EQ(a.losses.size(), 20u);
  ASSERT_EQ(b1.losses.size(), 10u);
  ASSERT_EQ(b2.losses.size(), 10u);
  for (int s = 0; s < 20; ++s)
    EXPECT_EQ(a.losses[s], s < 10 ? b1.losses[s] : b2.losses[s - 10]) << "step " << s + 1;
  if (v.dtype == DType::f16) {
    ASSERT_FALSE(a.skipped_steps.empty()) << "the fp16 variant must exercise the loss scaler";
    for (int s = 10; s < 20; ++s) EXPECT_EQ(a.loss_scales[s], b2.loss_scales[s - 10]) << "step " << s + 1;
  }
  EXPECT_EQ(bytes_of(straight.save_safetensors), bytes_of(second.save_safetensors));
  EXPECT_EQ(a.val_loss, b2.val_loss);
}

INSTANTIATE_TEST_SUITE_P(Checkpoint, ResumeIsExact,
                         ::testing::Values(Variant{"fp32_stage0", DType::f32, 0, Tier::device},
                                           Variant{"bf16_stage3_cpu_offload", DType::bf16, 3, Tier::host},
                                           Variant{"bf16_stage2_nvme_offload", DType::bf16, 2, Tier::nvme},
                                           Variant{"fp16_stage1_loss_scaler", DType::f16, 1, Tier::device},
                                           Variant{"llama_fp32_stage0", DType::f32, 0, Tier::device, "llama-tiny"},
                                           Variant{"llama_bf16_stage3_cpu_offload", DType::bf16, 3, Tier::host,
                                                   "llama-tiny"}),
                         [](const auto& info) { return std::string(info.param.name); });

// A crash at each phase of the step-10 save (after the data files, after the manifest, after the
// rename but before `latest` moves): the job fails, leaving no temporary folder, and --resume latest
// continues from a complete checkpoint exactly as if nothing had happened.
TEST(Checkpoint, ACrashAtAnyPhaseOfASaveLeavesACompleteCheckpointToResumeFrom) {
  testing::TestDir d;
  const TrainResult straight = run(tiny(12, ""));
  for (const std::string phase : {"files written", "manifest written", "renamed"}) {
    SCOPED_TRACE(phase);
    const std::string dir = d.file("ckpt-" + std::to_string(phase.size()));
    TrainOptions o = tiny(10, dir);
    o.save_every = 5;
    TrainHooks crash;
    int saves = 0;
    crash.checkpoint_phase = [&](const std::string& p) {
      if (p == "files written") ++saves;
      if (saves == 2 && p == phase) throw std::runtime_error("simulated crash during the save");
    };
    EXPECT_THROW(run(o, crash), std::exception);
    const std::string expect = dir + (phase == "renamed" ? "/step-00000010" : "/step-00000005");
    std::string note;
    EXPECT_EQ(latest_checkpoint(dir, &note), phase == "renamed" ? dir + "/step-00000005" : expect)
        << "`latest` still names the previous checkpoint";
    EXPECT_FALSE(fs::exists(dir + "/.tmp-step-00000010")) << "a failed save removes its temporary folder";

    TrainOptions resume = tiny(12, dir);
    resume.resume = "latest";
    const TrainResult r = run(resume);
    ASSERT_EQ(r.losses.size(), 7u);  // from step 6
    for (int s = 5; s < 12; ++s) EXPECT_EQ(straight.losses[s], r.losses[s - 5]) << "step " << s + 1;
    EXPECT_EQ(latest_checkpoint(dir), dir + "/step-00000012");
  }
}

// The same with a real kill: the process dies by SIGKILL between the data files and the rename (in a
// forked child, as a death test), and --resume latest continues from the previous checkpoint exactly.
TEST(Checkpoint, ASigkillBetweenTheDataFilesAndTheRenameLeavesThePreviousCheckpoint) {
  // "fast": the child is a fork of this process at this point (same folder); no OpenMP pool exists yet
  // here, as ctest runs this test alone in its process.
  GTEST_FLAG_SET(death_test_style, "fast");
  testing::TestDir d;
  const std::string dir = d.file("ckpt");
  TrainOptions o = tiny(10, dir);
  o.save_every = 5;
  TrainHooks kill;
  int saves = 0;
  kill.checkpoint_phase = [&](const std::string& p) {
    if (p == "files written" && ++saves == 2) ::raise(SIGKILL);
  };
  EXPECT_EXIT(run(o, kill), ::testing::KilledBySignal(SIGKILL), "");
  EXPECT_TRUE(fs::exists(dir + "/.tmp-step-00000010/rank-00000.bin")) << "killed after its data file";
  EXPECT_FALSE(fs::exists(dir + "/step-00000010"));
  EXPECT_EQ(latest_checkpoint(dir), dir + "/step-00000005");
  TrainOptions resume = tiny(10, dir);
  resume.resume = "latest";
  const TrainResult r = run(resume), straight = run(tiny(10, ""));
  ASSERT_EQ(r.losses.size(), 5u);
  for (int s = 5; s < 10; ++s) EXPECT_EQ(straight.losses[s], r.losses[s - 5]) << "step " << s + 1;
}

TEST(Checkpoint, KeepLastKeepsTheNewestCheckpointsAfterEachSave) {
  testing::TestDir d;
  TrainOptions o = tiny(9, d.file("ckpt"));
  o.save_every = 2;
  o.keep_last = 2;
  run(o);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(d.file("ckpt"))) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{".tierzero.lock", "latest", "step-00000008", "step-00000009"}));
  EXPECT_EQ(bytes_of(d.file("ckpt/latest")), "step-00000009\n");
}

TEST(Checkpoint, ResumeLatestWithNoCheckpointYetStartsFromStepOne) {
  testing::TestDir d;
  TrainOptions o = tiny(3, d.file("fresh"));
  o.resume = "latest";
  const TrainResult r = run(o);
  EXPECT_EQ(r.losses, run(tiny(3, "")).losses);
  EXPECT_TRUE(fs::exists(d.file("fresh/step-00000003/manifest.json")));
}

TEST(Checkpoint, AStaleLatestPointerFallsBackToTheNewestCheckpointButNeverPastADamagedOne) {
  testing::TestDir d;
  TrainOptions o = tiny(4, d.file("ckpt"));
  o.save_every = 2;
  run(o);
  std::ofstream(d.file("ckpt/latest")) << "step-00000099\n";  // a folder that is not there
  std::string note;
  EXPECT_EQ(latest_checkpoint(d.file("ckpt"), &note), d.file("ckpt") + "/step-00000004");
  EXPECT_NE(note.find("names 'step-00000099', which does not exist"), std::string::npos) << note;
  fs::create_directory(d.file("ckpt/step-00000050"));  // no manifest: an incomplete copy, the newest
  try {
    latest_checkpoint(d.file("ckpt"));
    ADD_FAILURE() << "a damaged newest checkpoint was passed over";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("resume it with --resume " + d.file("ckpt") + "/step-00000004"),
              std::string::npos) << e.what();
  }
}

// --resume latest with the newest checkpoint failing its checksum: refused naming it and the previous,
// intact one, with both left as they were.
TEST(Checkpoint, ResumeLatestFromAChecksumFailureNamesTheNewestIntactCheckpoint) {
  testing::TestDir d;
  TrainOptions o = tiny(2, d.file("ckpt"));
  o.save_every = 1;
  run(o);
  const std::string bad = d.file("ckpt/step-00000002"), good = d.file("ckpt/step-00000001");
  {
    std::fstream f(bad + "/rank-00000.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1000);
    f.put('\x7f');
  }
  const std::string before = bytes_of(bad + "/rank-00000.bin") + bytes_of(good + "/rank-00000.bin");
  TrainOptions r = tiny(4, d.file("ckpt"));
  r.resume = "latest";
  const std::string e = error_of(r);
  EXPECT_NE(e.find("checkpoint " + bad + " is damaged, and nothing was deleted; the newest intact checkpoint is " +
                   good + ": resume it with --resume " + good),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("rank-00000.bin' fails its checksum"), std::string::npos) << e;
  EXPECT_EQ(bytes_of(bad + "/rank-00000.bin") + bytes_of(good + "/rank-00000.bin"), before);
  EXPECT_EQ(bytes_of(d.file("ckpt/latest")), "step-00000002\n");
}

class DamagedCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    TrainOptions o = tiny(2, d.file("ckpt"));
    run(o);
    step = d.file("ckpt/step-00000002");
  }
  TrainOptions resume_from(const std::string& path) {
    TrainOptions o = tiny(4, "");
    o.resume = path;
    return o;
  }
  testing::TestDir d;
  std::string step;
};

TEST_F(DamagedCheckpoint, AFlippedByteFailsTheChecksumNamingTheFile) {
  std::fstream f(step + "/rank-00000.bin", std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(1000);
  f.put('\x7f');
  f.close();
  EXPECT_NE(error_of(resume_from(step)).find("rank-00000.bin' fails its checksum"), std::string::npos)
      << error_of(resume_from(step));
}

TEST_F(DamagedCheckpoint, ATruncatedFileIsRefusedWithItsSize) {
  fs::resize_file(step + "/rank-00000.bin", 4096);
  const std::string e = error_of(resume_from(step));
  EXPECT_NE(e.find("rank-00000.bin' is 4096 bytes but the manifest says"), std::string::npos) << e;
}

TEST_F(DamagedCheckpoint, AGarbledManifestIsRefusedAsInvalidJson) {
  std::ofstream(step + "/manifest.json") << "{\"format\": \"tierzero-checkpoint\", ";
  const std::string e = error_of(resume_from(step));
  EXPECT_NE(e.find("manifest.json' is not valid JSON"), std::string::npos) << e;
}

TEST_F(DamagedCheckpoint, AManifestWithAHoleInAGroupIsRefused) {
  std::string text = bytes_of(step + "/manifest.json");
  auto j = nlohmann::json::parse(text);
  j["files"][0]["sections"].erase(1);  // its bytes stay in the file: a hole in the group and in the file
  std::ofstream(step + "/manifest.json") << j.dump();
  const std::string e = error_of(resume_from(step));
  EXPECT_NE(e.find("checkpoint " + step + " is damaged, and nothing was deleted"), std::string::npos) << e;
  EXPECT_NE(e.find("files[0] (rank-00000.bin) bytes [245760, 848640) belong to no section; the checkpoint is "
                   "damaged: resume from another checkpoint"),
            std::string::npos)
      << e;
}

// The manifest's tensor offsets are trusted only where they lie in order inside the group (a checkpoint of an
// earlier layout is read from them): one moved onto the tensor before it, or a shape whose product would
// overflow, is damage.
TEST_F(DamagedCheckpoint, AManifestWhoseTensorsOverlapOrOverflowIsRefused) {
  const std::string text = bytes_of(step + "/manifest.json");
  auto j = nlohmann::json::parse(text);
  const std::string second = j["groups"][1]["tensors"][1]["name"];
  j["groups"][1]["tensors"][1]["offset"] = 0;
  std::ofstream(step + "/manifest.json") << j.dump();
  std::string e = error_of(resume_from(step));
  EXPECT_NE(e.find("groups[1].tensors[1] (" + second.substr(std::string("transformer.").size()) + ") holds "),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("it must lie after the one before it"), std::string::npos) << e;
  EXPECT_NE(e.find("the checkpoint is damaged: resume from another checkpoint"), std::string::npos) << e;
  j = nlohmann::json::parse(text);
  j["groups"][1]["tensors"][2]["shape"] = {std::uint64_t(1) << 39, std::uint64_t(1) << 39};
  std::ofstream(step + "/manifest.json") << j.dump();
  e = error_of(resume_from(step));
  EXPECT_NE(e.find("'groups[1].tensors[2].shape' must list whole numbers below 2^40"), std::string::npos)
      << e;
}

TEST_F(DamagedCheckpoint, AFolderWithoutACheckpointIsRefused) {
  const std::string e = error_of(resume_from(d.file("nowhere")));
  EXPECT_NE(e.find("--resume " + d.file("nowhere") + ": no such checkpoint folder"), std::string::npos) << e;
}

TEST_F(DamagedCheckpoint, AnotherModelIsRefusedNamingBothShapes) {
  TrainOptions o = resume_from(step);
  o.model.n_layer = 3;
  const std::string e = error_of(o);
  EXPECT_NE(e.find("holds a model of 2 layers"), std::string::npos) << e;
  EXPECT_NE(e.find("this run's model is 3 layers"), std::string::npos) << e;
}

TEST_F(DamagedCheckpoint, OtherTrainingDataIsRefused) {
  std::ofstream(d.file("tokens.bin"), std::ios::binary) << std::string(1 << 16, '\x01');
  TrainOptions o = resume_from(step);
  o.data = d.file("tokens.bin");
  const std::string e = error_of(o);
  EXPECT_NE(e.find("was trained on data (default corpus) other than --data"), std::string::npos) << e;
}

TEST_F(DamagedCheckpoint, ResumeAndInitFromTogetherAreRefused) {
  TrainOptions o = resume_from(step);
  o.init_from = d.file("model.safetensors");
  const std::string e = error_of(o);
  EXPECT_NE(e.find("--resume and --init-from both give the starting weights"), std::string::npos) << e;
}

}  // namespace
}  // namespace tz
