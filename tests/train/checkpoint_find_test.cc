// Choosing the checkpoint in a folder of checkpoints: the `latest` pointer is trusted only when it is a
// small regular file naming an intact checkpoint; a damaged pointer or checkpoint is refused naming the
// newest intact one (never a silent fall back to older steps), and nothing is deleted or changed.
#include "train/checkpoint_find.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "core/error.h"
#include "model/param_layout.h"
#include "tests/common/test_dir.h"
#include "train/checkpoint.h"
#include "train/checkpoint_manifest.h"

namespace tz {
namespace {

namespace fs = std::filesystem;

// A checkpoint of the tiny model as one rank writes it (zeros; the checksum is not what these tests
// look at), at DIR/step-NNNNNNNN.
std::string write_checkpoint(const std::string& dir, int step) {
  CheckpointManifest m;
  m.step = step;
  m.global_batch_tokens = 512;
  m.model = model_preset("tiny");
  m.dtype = "fp32";
  m.offload_optimizer = m.offload_param = "device";
  m.schedule = nlohmann::json::object();
  m.files = {{"rank-00000.bin", 0, 0, {}}};
  const ParamLayout layout = ParamLayout::build(m.model);
  for (std::size_t g = 0; g < layout.groups.size(); ++g) {
    m.groups.push_back({layout.groups[g].name, layout.groups[g].count, nlohmann::json::array()});
    m.files[0].sections.push_back({int(g), 0, layout.groups[g].count, m.files[0].bytes});
    m.files[0].bytes += 12 * layout.groups[g].count;
  }
  const std::string folder = dir + "/" + checkpoint_name(step);
  fs::create_directories(folder);
  std::ofstream(folder + "/manifest.json") << manifest_to_json(m).dump(1);
  std::ofstream(folder + "/rank-00000.bin", std::ios::binary) << std::string(m.files[0].bytes, '\0');
  return folder;
}

void point(const std::string& dir, const std::string& text) { std::ofstream(dir + "/latest") << text; }

// Every entry under `dir`: its type, size and (for regular files) its bytes.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> s;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const auto st = fs::symlink_status(e.path());
    std::string v = std::to_string(int(st.type()));
    if (st.type() == fs::file_type::regular) {
      std::ifstream f(e.path(), std::ios::binary);
      v += ":" + std::string(std::istreambuf_iterator<char>(f), {});
    }
    if (st.type() == fs::file_type::symlink) v += ":" + fs::read_symlink(e.path()).string();
    s[e.path().string()] = v;
  }
  return s;
}

class LatestCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    step1 = write_checkpoint(dir, 1);
    step2 = write_checkpoint(dir, 2);
    point(dir, "step-00000002\n");
  }
  // latest_checkpoint must refuse, naming `parts`; the folder is unchanged.
  void expect_refused(std::initializer_list<std::string> parts) {
    const auto before = snapshot(dir);
    try {
      const std::string got = latest_checkpoint(dir);
      ADD_FAILURE() << "chose " << got;
    } catch (const Error& e) {
      for (const auto& p : parts)
        EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << p << " in " << e.what();
    }
    EXPECT_EQ(snapshot(dir), before) << "the checkpoints were changed";
  }
  testing::TestDir d;
  const std::string dir = d.file("ckpt");
  std::string step1, step2;
};

TEST_F(LatestCheckpoint, APointerToAnIntactCheckpointChoosesIt) {
  EXPECT_EQ(latest_checkpoint(dir), step2);
  point(dir, "step-00000001\n");  // the pointer decides, not the highest number
  EXPECT_EQ(latest_checkpoint(dir), step1);
  fs::remove(dir + "/latest");  // no pointer: the highest folder
  EXPECT_EQ(latest_checkpoint(dir), step2);
}

TEST_F(LatestCheckpoint, APointerToAFolderThatDoesNotExistFallsBackToTheNewestWithANote) {
  point(dir, "step-00000099\n");
  std::string note;
  EXPECT_EQ(latest_checkpoint(dir, &note), step2);
  EXPECT_NE(note.find("names 'step-00000099', which does not exist; using the newest checkpoint"),
            std::string::npos)
      << note;
}

TEST_F(LatestCheckpoint, ATruncatedDataFileIsRefusedNamingTheNewestIntactOne) {
  fs::resize_file(step2 + "/rank-00000.bin", 4096);
  expect_refused(
      {"checkpoint " + step2 + " (the one " + dir + "/latest names) is damaged, and nothing was deleted",
       "the newest intact checkpoint is " + step1 + ": resume it with --resume " + step1,
       "rank-00000.bin' is 4096 bytes but the manifest says"});
}

TEST_F(LatestCheckpoint, AMissingDataFileIsRefusedNamingTheNewestIntactOne) {
  fs::remove(step2 + "/rank-00000.bin");
  expect_refused(
      {"checkpoint " + step2, "resume it with --resume " + step1, "cannot open checkpoint data file"});
}

TEST_F(LatestCheckpoint, AManifestThatFailsValidationIsRefusedNamingTheNewestIntactOne) {
  auto j = nlohmann::json::parse(std::ifstream(step2 + "/manifest.json"));
  j["files"][0]["sections"][1]["offset"] = 0;  // overlaps section 0
  std::ofstream(step2 + "/manifest.json") << j.dump();
  expect_refused({"checkpoint " + step2, "resume it with --resume " + step1, "overlap those of"});
}

TEST_F(LatestCheckpoint, WithNoOtherIntactCheckpointTheRefusalSaysSo) {
  fs::remove(step1 + "/rank-00000.bin");
  fs::remove(step2 + "/manifest.json");
  expect_refused({"checkpoint " + step2, "no other checkpoint in " + dir + " is intact"});
}

TEST_F(LatestCheckpoint, ADamagedNewestFolderWithoutAPointerIsRefused) {
  fs::remove(dir + "/latest");
  fs::create_directory(dir + "/step-00000050");  // no manifest: not a checkpoint tierzero wrote
  expect_refused({"checkpoint " + dir + "/step-00000050 (the newest in " + dir + ") is damaged",
                  "resume it with --resume " + step2});
}

TEST_F(LatestCheckpoint, APointerOverFourKibIsRefused) {
  point(dir, "step-00000002\n" + std::string(5 * 1024, ' '));
  expect_refused({"the checkpoint pointer " + dir + "/latest is damaged", "is 5134 bytes, more than the 4096",
                  "resume it with --resume " + step2});
}

TEST_F(LatestCheckpoint, APointerThatNamesNoStepFolderIsRefused) {
  for (const std::string text : {"", "../step-00000002\n", "step-2\n", "/etc\n"}) {
    point(dir, text);
    expect_refused(
        {"the checkpoint pointer " + dir + "/latest is damaged", "which is not a step-NNNNNNNN folder name"});
  }
}

TEST_F(LatestCheckpoint, APointerThatIsAFifoIsRefusedWithoutBlocking) {
  fs::remove(dir + "/latest");
  ASSERT_EQ(::mkfifo((dir + "/latest").c_str(), 0600), 0);
  expect_refused({"the checkpoint pointer " + dir + "/latest is damaged", "is not a regular file (a FIFO)",
                  "resume it with --resume " + step2});
}

TEST_F(LatestCheckpoint, APointerThatIsASymlinkToADeviceIsRefused) {
  fs::remove(dir + "/latest");
  fs::create_symlink("/dev/zero", dir + "/latest");
  expect_refused(
      {"the checkpoint pointer " + dir + "/latest is damaged", "is not a regular file (a character device)"});
  fs::remove(dir + "/latest");
  fs::create_symlink(dir + "/nowhere", dir + "/latest");  // dangling
  expect_refused({"the checkpoint pointer " + dir + "/latest is damaged", "cannot open checkpoint pointer"});
}

TEST_F(LatestCheckpoint, ADamagedSiblingIsPassedOverWhenNamingTheNewestIntact) {
  write_checkpoint(dir, 3);
  fs::resize_file(dir + "/step-00000003/rank-00000.bin", 0);
  point(dir, "step-00000003\n");
  fs::remove(step2 + "/manifest.json");
  expect_refused({"checkpoint " + dir + "/step-00000003", "resume it with --resume " + step1});
  EXPECT_EQ(newest_intact_checkpoint(dir), step1);
  EXPECT_EQ(newest_intact_checkpoint(dir, step1), "");
}

}  // namespace
}  // namespace tz
