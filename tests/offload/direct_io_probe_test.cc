// Tests offload/direct_io_probe.h: a writable local folder passes (on these machines' ext4 /tmp), and a
// missing folder or a file is reported naming the path, without throwing.
#include "offload/direct_io_probe.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/common/test_dir.h"
#include "tests/offload/direct_io_probe.h"

namespace tz {
namespace {

TEST(DirectIoProbe, AFolderWhereTheStoreWorksPassesWithItsFilesystemAndFreeSpace) {
  testing::TestDir d;
  const std::string why = test::direct_io_unsupported(d.path());
  if (!why.empty()) GTEST_SKIP() << why;
  const DirectIoReport r = probe_direct_io(d.path());
  EXPECT_TRUE(r.ok) << r.why;
  EXPECT_NE(r.filesystem, "");
  EXPECT_GT(r.free_bytes, 0u);
  EXPECT_TRUE(std::filesystem::is_empty(d.path())) << "the probe file is removed";
}

TEST(DirectIoProbe, AMissingFolderOrAFileIsReportedNamingThePath) {
  testing::TestDir d;
  DirectIoReport r = probe_direct_io(d.file("missing"));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.why, d.file("missing") + ": No such file or directory");
  std::ofstream(d.file("plain")) << "x";
  r = probe_direct_io(d.file("plain"));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.why, d.file("plain") + " is not a folder");
}

}  // namespace
}  // namespace tz
