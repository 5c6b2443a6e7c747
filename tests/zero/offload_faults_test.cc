// Faults of the NVMe tier seen from training: a byte flipped in a swap file stops the next step with the
// checksum error (nothing trains on it; fp32 states and compressed ones alike), and a disk too small is
// refused before step 1.
#include <gtest/gtest.h>
#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "comm/communicator.h"
#include "core/error.h"
#include "offload/nvme_store.h"
#include "tests/common/test_dir.h"
#include "zero/engine.h"
#include "train/trainer.h"

namespace tz {
namespace {

void quiet(const std::string&) {}

TrainOptions tiny_on_nvme(const std::string& path) {
  TrainOptions o;
  o.model = model_preset("tiny");
  o.steps = 4;
  o.log_every = 0;
  o.val_batches = 1;
  o.dtype = DType::bf16;
  o.zero.stage = 3;
  o.zero.param_persistence_threshold = 0;
  o.offload.optimizer = Tier::nvme;
  o.offload.param = Tier::nvme;
  o.offload.nvme_paths = {path};
  o.offload.aio_block_size = 4096;
  return o;
}

class OffloadFaultsFormats : public ::testing::TestWithParam<MomentFormat> {};

// In fp32 and in compressed formats (int8 moments and a bf16-sr master: records of codes and absmax).
TEST_P(OffloadFaultsFormats, AByteFlippedInTheSwapFileStopsTheNextStepWithTheChecksumError) {
  testing::TestDir dir;
  auto comm = make_self_comm();
  TrainOptions o = tiny_on_nvme(dir.path());
  o.offload.optimizer_states = GetParam();
  if (GetParam() != MomentFormat::fp32) o.offload.master_weights = MasterFormat::bf16_sr;
  int steps_done = 0;
  TrainHooks hooks;
  hooks.before_step = [&](int step, Engine& e) {
    steps_done = step;
    if (step != 2) return;
    // Corrupt one byte of the store's file behind its back (as a failing drive would).
    const std::string& file = e.nvme_store()->files().at(0);
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good()) << file;
    f.seekg(100);
    char c = 0;
    f.read(&c, 1);
    c = char(c ^ 0x5a);
    f.seekp(100);
    f.write(&c, 1);
    f.close();
    // O_DIRECT reads bypass the page cache, but drop it anyway so the flip is what the read sees.
    std::ofstream("/proc/sys/vm/drop_caches") << "1";
  };
  try {
    train(o, *comm, quiet, hooks);
    FAIL() << "expected the checksum error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("checksum mismatch"), std::string::npos) << m;
    EXPECT_NE(m.find("store.dat"), std::string::npos) << m;
  }
  EXPECT_EQ(steps_done, 2);  // the optimizer step that read the flipped block never completed
  // The store's files and its per-run directory are gone after the failure too.
  for (auto& entry : std::filesystem::directory_iterator(dir.path()))
    ADD_FAILURE() << "left behind: " << entry.path();
}

INSTANTIATE_TEST_SUITE_P(States, OffloadFaultsFormats,
                         ::testing::Values(MomentFormat::fp32, MomentFormat::int8),
                         [](const auto& info) { return std::string(moment_format_name(info.param)); });

TEST(OffloadFaults, ADiskTooSmallForTheStatesIsRefusedBeforeStep1WithTheNeedAndTheFreeSpace) {
  testing::TestDir dir;
  if (::mount("tmpfs", dir.path().c_str(), "tmpfs", 0, "size=256k") != 0)
    GTEST_SKIP() << "cannot mount a small tmpfs at " << dir.path() << ": " << std::strerror(errno)
                 << " (needs root)";
  auto comm = make_self_comm();
  TrainOptions o = tiny_on_nvme(dir.path());
  int steps_done = 0;
  try {
    TrainHooks hooks;
    hooks.before_step = [&](int step, Engine&) { steps_done = step; };
    train(o, *comm, quiet, hooks);
    ADD_FAILURE() << "expected the full-disk error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("not enough space"), std::string::npos) << m;
    EXPECT_NE(m.find("need"), std::string::npos) << m;
    EXPECT_NE(m.find("free"), std::string::npos) << m;
  }
  EXPECT_EQ(steps_done, 0);
  ::umount(dir.path().c_str());
}

}  // namespace
}  // namespace tz
