// read_metrics (launch/metrics_reader.h): resume records supersede later steps, a cut last line and
// lines that are not JSON are left out, and lines crossing the reader's 4 MiB pieces are read whole.
#include "launch/metrics_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "core/error.h"

namespace tz {
namespace {

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text) {
    char p[] = "/tmp/metrics_reader_test.XXXXXX";
    const int fd = mkstemp(p);
    EXPECT_GE(fd, 0);
    close(fd);
    path = p;
    std::ofstream(path, std::ios::binary) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
};

std::string rec(int step, double loss) {
  return "{\"step\":" + std::to_string(step) + ",\"loss\":" + std::to_string(loss) +
         ",\"tokens_per_s\":100,\"ms\":{\"step\":10,\"data\":1,\"forward\":2,\"backward\":3,\"optimizer\":4},"
         "\"ranks\":{\"bytes\":{\"host\":[1048576,2097152]},\"ms\":{\"step\":{\"slowest_rank\":1}}},"
         "\"straggler\":{\"rank\":1,\"host\":\"h\",\"ratio\":2.0}}\n";
}

TEST(MetricsReader, AResumeSupersedesTheLaterStepsWrittenBeforeItAndACutLineIsLeftOut) {
  std::string text = "{\"event\":\"start\",\"run_id\":\"a\",\"step\":0,\"world_size\":2}\n";
  for (int s = 1; s <= 5; ++s) text += rec(s, 10 - s);
  text += "{\"step\":4,\"val_loss\":7.5}\nnot json at all\n";
  text += "{\"event\":\"resume\",\"run_id\":\"a\",\"step\":3,\"world_size\":2}\n";
  for (int s = 4; s <= 6; ++s) text += rec(s, 100 + s);
  text += "{\"event\":\"end\",\"step\":6,\"signal\":0}\n{\"step\":7,\"lo";
  TempFile f(text);
  const MetricsRun r = read_metrics(f.path);
  ASSERT_EQ(r.steps.size(), 6u);
  for (int s = 1; s <= 6; ++s) EXPECT_EQ(r.steps[s - 1].step, s);
  EXPECT_EQ(r.steps[2].loss, 7.0);    // step 3, before the resume point: kept
  EXPECT_EQ(r.steps[3].loss, 104.0);  // step 4 as trained again after the resume
  EXPECT_TRUE(r.val.empty());         // the validation after step 4 was superseded too
  EXPECT_EQ(r.resumes, 1);
  EXPECT_EQ(r.unreadable, 1u);
  EXPECT_TRUE(r.cut_last_line);
  EXPECT_EQ(r.run["event"], "resume");
  EXPECT_EQ(r.steps[0].step_ms, 10.0);
  EXPECT_EQ(r.steps[0].slowest_rank, 1.0);
  EXPECT_EQ(r.steps[0].straggler_rank, 1.0);
  ASSERT_EQ(r.steps[0].rank_host_bytes.size(), 2u);
  EXPECT_EQ(r.steps[0].rank_host_bytes[1], 2097152.0);
  EXPECT_TRUE(std::isnan(r.steps[0].nvme_gbps));
}

TEST(MetricsReader, LinesAcrossItsPiecesAreReadWhole) {
  // About 12 MB: records cross the 4 MiB pieces the file is read in.
  std::string text;
  for (int s = 1; s <= 40000; ++s) text += rec(s, s * 0.5);
  ASSERT_GT(text.size(), std::size_t(9) << 20);
  TempFile f(text);
  const MetricsRun r = read_metrics(f.path);
  ASSERT_EQ(r.steps.size(), 40000u);
  for (int s = 1; s <= 40000; ++s) ASSERT_EQ(r.steps[s - 1].loss, s * 0.5) << s;
  EXPECT_EQ(r.unreadable, 0u);
  EXPECT_FALSE(r.cut_last_line);
}

TEST(MetricsReader, AFileWithoutATrainingRecordIsRefusedNamingIt) {
  TempFile empty(""), start("{\"event\":\"start\",\"step\":0}\n"), text("hello\nworld\n"), partial("{\"step\":1");
  for (const auto* f : {&empty, &start, &text, &partial}) {
    try {
      read_metrics(f->path);
      ADD_FAILURE() << "accepted " << f->path;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(f->path), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tz
