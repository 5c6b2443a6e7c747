// Tests train/output_checks.h: every output is checked before step 1: a missing folder, a folder, a
// device or FIFO in its place, and an output that is one of the run's inputs (by name, symlink or hard
// link) are refused naming the flag and the path, and the input is left as it was.
#include "train/output_checks.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "comm/communicator.h"
#include "core/error.h"
#include "model/token_file.h"
#include "tests/common/error_message.h"
#include "tests/common/test_dir.h"
#include "train/trainer.h"

namespace tz {
namespace {

using testing::error_message;

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

TEST(OutputChecks, AnOutputInAMissingFolderOrInPlaceOfAFolderDeviceOrFifoIsRefused) {
  testing::TestDir dir;
  TrainOptions o;
  o.metrics = dir.file("no/such/folder/m.jsonl");
  std::string m = error_message([&] { check_outputs(o); });
  EXPECT_TRUE(has(m, "--metrics '" + o.metrics + "' cannot be written")) << m;
  EXPECT_TRUE(has(m, "No such file or directory")) << m;
  o.metrics.clear();
  o.save_safetensors = dir.path();
  m = error_message([&] { check_outputs(o); });
  EXPECT_TRUE(has(m, "--save-safetensors '" + dir.path() + "' exists and is a folder, not a regular file")) << m;
  o.save_safetensors = "/dev/null";  // renaming over it would replace the device node
  m = error_message([&] { check_outputs(o); });
  EXPECT_TRUE(has(m, "'/dev/null' exists and is a character device, not a regular file")) << m;
  const std::string fifo = dir.file("m.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  o.save_safetensors.clear();
  o.metrics = fifo;
  m = error_message([&] { check_outputs(o); });
  EXPECT_TRUE(has(m, "'" + fifo + "' exists and is a FIFO, not a regular file")) << m;
  // A fresh path in a writable folder, and an existing regular file to be replaced, are fine; the
  // check leaves nothing behind.
  o.metrics = dir.file("m.jsonl");
  o.save_safetensors = dir.file("model.safetensors");
  std::ofstream(o.save_safetensors) << "old";
  check_outputs(o);
  int entries = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path())) entries += e.path().filename() != "m.fifo";
  EXPECT_EQ(entries, 1);  // model.safetensors only
}

TEST(OutputChecks, AnOutputThatIsAnInputIsRefusedByNameSymlinkOrHardLink) {
  testing::TestDir dir;
  const std::string data = dir.file("train.bin"), cfg = dir.file("ds.json");
  write_token_file(data, std::vector<std::uint32_t>(100, 7));
  std::ofstream(cfg) << "{}";
  ASSERT_EQ(::symlink(data.c_str(), dir.file("link.bin").c_str()), 0);
  ASSERT_EQ(::link(data.c_str(), dir.file("hard.bin").c_str()), 0);
  TrainOptions o;
  o.data = data;
  o.config = cfg;
  const auto inputs = protect_inputs(o);
  for (const auto& [out, how] : {std::pair{data, ""}, {dir.file("link.bin"), " (it is a symlink to it)"},
                                 {dir.file("hard.bin"), " (a hard link to it)"}}) {
    o.metrics = out;
    const std::string m = error_message([&] { check_outputs(o); });
    EXPECT_TRUE(has(m, "--metrics '" + out + "' is --data '" + data + "'" + how + ", which this command reads")) << m;
  }
  o.metrics.clear();
  o.save_safetensors = cfg;
  std::string m = error_message([&] { check_outputs(o); });
  EXPECT_TRUE(has(m, "--save-safetensors '" + cfg + "' is --config '" + cfg + "'")) << m;
  o.save_safetensors = o.metrics = dir.file("both");
  m = error_message([&] { check_outputs(o); });
  EXPECT_TRUE(has(m, "--save-safetensors '" + o.metrics + "' and --metrics '" + o.metrics + "' name the same file")) << m;
}

// End to end: --metrics pointed at the data file stops the run before step 1 and the data survives.
TEST(OutputChecks, TrainingWithMetricsOverItsDataFileStopsBeforeStep1AndKeepsTheData) {
  testing::TestDir dir;
  const std::string data = dir.file("train.bin");
  write_token_file(data, std::vector<std::uint32_t>(5000, 65));
  const auto size = std::filesystem::file_size(data);
  TrainOptions o;
  o.model = model_preset("tiny");
  o.steps = 2;
  o.data = data;
  o.metrics = data;
  auto comm = make_self_comm();
  int lines = 0;
  const std::string m = error_message([&] { train(o, *comm, [&](const std::string&) { ++lines; }); });
  EXPECT_TRUE(has(m, "is --data '" + data + "', which this command reads")) << m;
  EXPECT_EQ(lines, 0);  // nothing was printed: it stopped before the plan
  EXPECT_EQ(std::filesystem::file_size(data), size);
  EXPECT_EQ(read_token_file(data).size(), 5000u);
}

}  // namespace
}  // namespace tz
