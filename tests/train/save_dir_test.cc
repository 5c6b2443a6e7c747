// Tests train/save_dir.h on one rank: a save-dir belongs to one run (a held lock refuses a second job at
// once, naming the first; a planted symlink or FIFO in the lock's place is refused), a fresh run never
// takes over another run's checkpoints, resumes inherit the run id, pruning removes only this run's
// step folders, an output inside the checkpoint being resumed is refused with the checkpoint intact, and
// a second signal during a save lets it finish and stops the run at once.
#include "train/save_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "core/error.h"
#include "tests/common/one_rank_run.h"
#include "tests/common/test_dir.h"
#include "train/checkpoint_manifest.h"
#include "train/trainer.h"

namespace tz {
namespace {

namespace fs = std::filesystem;

TrainOptions tiny(int steps, const std::string& save_dir) {
  TrainOptions o = testing::tiny_run(steps, save_dir);
  o.val_batches = 1;
  return o;
}

TrainResult run(const TrainOptions& o, const TrainHooks& hooks = {}, StopSignals* stop = nullptr) {
  return testing::run_one_rank(o, hooks, stop);
}

std::string error_of(const TrainOptions& o) { return testing::run_error(o); }

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

std::string bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Every file under dir but the lock (which each run rewrites), relative name -> bytes, to show that a
// refused run changed nothing. Compared with EXPECT_TRUE (the bytes are not for printing).
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> m;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != kSaveDirLock)
      m[fs::relative(e.path(), dir).string()] = bytes_of(e.path().string());
  return m;
}

std::string run_id_of(const std::string& step_dir) { return read_manifest(step_dir).run_id; }

TEST(SaveDir, AFreshRunIntoASaveDirWithCheckpointsIsRefusedAndResumeLatestContinuesIt) {
  testing::TestDir d;
  const std::string dir = d.file("ckpt");
  run(tiny(4, dir));
  const std::string id = run_id_of(dir + "/step-00000004");
  EXPECT_EQ(id.size(), 16u);
  const auto before = snapshot(dir);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string m = error_of(tiny(6, dir));
  EXPECT_TRUE(has(m, "--save-dir " + dir + " holds checkpoints of an earlier run (step-00000004) and this run "
                     "starts afresh: continue that run with --resume latest, or give another --save-dir")) << m;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_TRUE(snapshot(dir) == before) << "the refused run changed nothing";
  TrainOptions resume = tiny(6, dir);
  resume.resume = "latest";
  EXPECT_EQ(run(resume).losses.size(), 2u);
  EXPECT_EQ(run_id_of(dir + "/step-00000006"), id) << "a resumed run inherits the run id";
}

TEST(SaveDir, ASecondJobOnAHeldSaveDirIsRefusedAtOnceNamingTheFirst) {
  testing::TestDir d;
  const std::string dir = d.file("ckpt");
  auto comm = make_self_comm();
  {
    const SaveDirLease first(dir, *comm, "4242");
    const auto t0 = std::chrono::steady_clock::now();
    const std::string m = error_of(tiny(2, dir));
    EXPECT_TRUE(has(m, "--save-dir '" + dir + "' is in use by another job (host ")) << m;
    EXPECT_TRUE(has(m, ", pid " + std::to_string(::getpid()) + ", Slurm job 4242, since 20")) << m;
    EXPECT_TRUE(has(m, "wait for that job to end, or give this one another --save-dir")) << m;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
    EXPECT_FALSE(fs::exists(dir + "/latest"));
  }
  EXPECT_EQ(run(tiny(2, dir)).losses.size(), 2u) << "the lock goes with its holder";
}

TEST(SaveDir, ALockFilePlantedAsASymlinkOrFifoIsRefusedAndLeftAlone) {
  testing::TestDir d;
  const std::string target = d.file("elsewhere.txt");
  std::ofstream(target) << "keep me";
  for (const bool fifo : {false, true}) {
    SCOPED_TRACE(fifo ? "fifo" : "symlink");
    const std::string dir = d.file(fifo ? "a" : "b"), lock = dir + "/" + kSaveDirLock;
    fs::create_directories(dir);
    ASSERT_EQ(fifo ? ::mkfifo(lock.c_str(), 0600) : ::symlink(target.c_str(), lock.c_str()), 0);
    const std::string m = error_of(tiny(2, dir));
    EXPECT_TRUE(has(m, fifo ? "its lock file " + lock + " is not a regular file; remove it"
                            : "cannot open its lock file " + lock + ": Too many levels of symbolic links"))
        << m;
    struct stat st {};
    ASSERT_EQ(::lstat(lock.c_str(), &st), 0);
    EXPECT_TRUE(fifo ? S_ISFIFO(st.st_mode) : S_ISLNK(st.st_mode));
  }
  EXPECT_EQ(bytes_of(target), "keep me");
}

// A requeued run resumes and prunes its own step folders; another run's folder in the same save-dir
// (here moved in by hand) is never removed.
TEST(SaveDir, PruningRemovesOnlyTheStepFoldersOfThisRun) {
  testing::TestDir d;
  const std::string dir = d.file("ckpt"), other = d.file("other");
  run(tiny(1, other));
  TrainOptions o = tiny(4, dir);
  o.save_every = 2;
  run(o);
  fs::rename(other + "/step-00000001", dir + "/step-00000001");
  const std::string mine = run_id_of(dir + "/step-00000004"), theirs = run_id_of(dir + "/step-00000001");
  ASSERT_NE(mine, theirs);
  TrainOptions resume = tiny(8, dir);
  resume.resume = "latest";
  resume.save_every = 2;
  resume.keep_last = 1;
  run(resume);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{".tierzero.lock", "latest", "step-00000001", "step-00000008"}));
  EXPECT_EQ(run_id_of(dir + "/step-00000008"), mine);
  EXPECT_EQ(run_id_of(dir + "/step-00000001"), theirs);
}

TEST(SaveDir, AnOutputInsideTheCheckpointBeingResumedIsRefusedAndTheCheckpointIsIntact) {
  testing::TestDir d;
  const std::string dir = d.file("ckpt");
  run(tiny(2, dir));
  const auto before = snapshot(dir);
  for (const std::string out : {dir + "/step-00000002/manifest.json", dir + "/step-00000002/model.safetensors",
                                dir + "/latest"}) {
    SCOPED_TRACE(out);
    TrainOptions o = tiny(4, dir);
    o.resume = "latest";
    o.save_safetensors = out;
    const std::string m = error_of(o);
    // Refused before the lease is taken or the checkpoint read: the run's own save-dir holds it.
    EXPECT_TRUE(has(m, "--save-safetensors '" + out + "' lies inside --save-dir '" + dir + "'")) << m;
    EXPECT_TRUE(snapshot(dir) == before);
  }
}

// A first signal stops after the step and still validates and exports; a second one, during a save or
// between two steps, lets the checkpoint of that step be saved and leaves out validation and export: no
// temporary folder, and the handler's record never ends the process.
TEST(SaveDir, ASecondSignalDuringASaveOrAStepLeavesOutAllButTheCheckpoint) {
  for (const bool during_save : {true, false}) {
    SCOPED_TRACE(during_save ? "during a save" : "between steps");
    testing::TestDir d;
    const std::string dir = d.file("ckpt");
    StopSignals stop;
    TrainHooks hooks;
    hooks.checkpoint_phase = [&](const std::string& phase) {
      if (during_save && phase == "files written" && stop.count.load() == 0)
        record_stop_signal(stop, 15), record_stop_signal(stop, 2);
    };
    hooks.before_step = [&](int s, Engine&) {
      if (!during_save && s == 2) record_stop_signal(stop, 1), record_stop_signal(stop, 15);
    };
    TrainOptions o = tiny(6, dir);
    o.save_every = 3;
    o.save_safetensors = d.file("model.safetensors");
    const TrainResult r = run(o, hooks, &stop);
    const int step = during_save ? 3 : 2;
    EXPECT_EQ(r.stopped_after, step);
    EXPECT_EQ(r.stop_signal, during_save ? 15 : 1) << "the first signal";
    EXPECT_EQ(r.stop_signals, 2);
    EXPECT_EQ(r.stop_rank, 0);
    EXPECT_EQ(r.checkpoint, dir + "/" + checkpoint_name(step));
    EXPECT_EQ(r.left_out, (std::vector<std::string>{"validation", "--save-safetensors"}));
    EXPECT_EQ(r.val_loss, -1) << "no validation after a second signal";
    EXPECT_FALSE(fs::exists(o.save_safetensors)) << "no export after a second signal";
    EXPECT_EQ(bytes_of(dir + "/latest"), checkpoint_name(step) + "\n");
    EXPECT_FALSE(fs::exists(dir + "/.tmp-" + checkpoint_name(step)));
    EXPECT_EQ(read_manifest(r.checkpoint).step, step);
  }
}

TEST(SaveDir, AFirstSignalAloneFinishesTheStepValidatesAndExports) {
  testing::TestDir d;
  StopSignals stop;
  TrainHooks hooks;
  hooks.before_step = [&](int s, Engine&) {
    if (s == 2) record_stop_signal(stop, 1);  // SIGHUP
  };
  TrainOptions o = tiny(6, d.file("ckpt"));
  o.save_safetensors = d.file("model.safetensors");
  const TrainResult r = run(o, hooks, &stop);
  EXPECT_EQ(r.stopped_after, 2);
  EXPECT_EQ(r.stop_signal, 1);
  EXPECT_EQ(r.stop_signals, 1);
  EXPECT_TRUE(r.left_out.empty());
  EXPECT_GT(r.val_loss, 0);
  EXPECT_TRUE(fs::exists(o.save_safetensors));
  EXPECT_EQ(read_manifest(r.checkpoint).step, 2);
}

}  // namespace
}  // namespace tz
