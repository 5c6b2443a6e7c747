// Tests offload/store_lock.h: a store being created on a path that other ranks are sweeping for
// leftovers is never mistaken for a leftover (ranks on one node, or on nodes sharing a file system, start
// at once and sweep the same --nvme-path while creating their own stores).
#include "offload/store_lock.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "tests/common/test_dir.h"

namespace tz {
namespace {

// Found by the two-host launch test (tests/launch/cluster/): the lock file was created, then locked, so
// a sweeping rank could take the lock in between and remove the new store as "left behind (unknown)";
// its owner's flock then failed with EWOULDBLOCK. The lock file now appears under its name only once
// it is locked and names its owner.
TEST(StoreLock, AStoreBeingCreatedIsNeverRemovedByAnotherRankSweepingThePath) {
  tz::testing::TestDir dir;
  std::atomic<bool> done{false};
  std::atomic<int> removed{0};
  std::vector<std::thread> sweepers;
  for (int t = 0; t < 2; ++t)
    sweepers.emplace_back([&] {
      while (!done.load()) removed += int(remove_stale_stores(dir.path()).size());
    });
  int failures = 0;
  std::string first_failure;
  std::vector<FileDescriptor> held;
  for (int i = 0; i < 2000; ++i) {
    const std::string folder = dir.file("tierzero-run-r" + std::to_string(i));
    try {
      held.push_back(lock_store_folder(folder));
    } catch (const Error& e) {
      if (failures++ == 0) first_failure = e.what();
      continue;
    }
    struct stat st {};
    if (::stat((folder + ".lock").c_str(), &st) != 0 && failures++ == 0)
      first_failure = folder + ".lock was removed while its owner held it";
  }
  done = true;
  for (auto& t : sweepers) t.join();
  EXPECT_EQ(failures, 0) << "first: " << first_failure;
  EXPECT_EQ(removed.load(), 0) << "live stores were removed as leftovers";
  // Only the lock files are left: no temporary names.
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(e.path().extension(), ".lock") << e.path();
    ++entries;
  }
  EXPECT_EQ(entries, 2000);
}

// A lock file whose owner is gone (its lock can be taken) is still a leftover: removed, with what it
// says about its owner.
TEST(StoreLock, AStoreWhoseOwnerIsGoneIsRemovedNamingTheOwner) {
  tz::testing::TestDir dir;
  const std::string folder = dir.file("tierzero-gone-r0");
  { FileDescriptor fd = lock_store_folder(folder); }  // the owner closes it: as if it died
  std::filesystem::create_directory(folder);
  const auto removed = remove_stale_stores(dir.path());
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].folder, folder);
  EXPECT_NE(removed[0].owner.find("pid "), std::string::npos) << removed[0].owner;
  EXPECT_FALSE(std::filesystem::exists(folder));
  EXPECT_FALSE(std::filesystem::exists(folder + ".lock"));
}

}  // namespace
}  // namespace tz
