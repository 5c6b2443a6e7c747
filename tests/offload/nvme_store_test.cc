// Tests offload/nvme_store.h: round trips over 1 and 3 striped paths at many sizes, block sizes and
// queue depths; faults (short/EAGAIN/EIO through the seam, a flipped byte on disk, a full disk on a
// small tmpfs) end in a clear tz::Error and never in wrong bytes; files are private and cleaned up.
#include "offload/nvme_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>
#include <tuple>
#include <vector>

#include "core/host_memory.h"
#include "tests/common/test_dir.h"
#include "tests/offload/direct_io_probe.h"

namespace tz {
namespace {

constexpr std::size_t KiB = 1024, MiB = 1024 * KiB;

class NvmeStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why = test::direct_io_unsupported(root_.path());
    if (!why.empty()) GTEST_SKIP() << why;
  }

  // `n` sibling directories standing in for n NVMe drives.
  std::vector<std::string> paths(int n) {
    std::vector<std::string> ps;
    for (int i = 0; i < n; ++i) {
      ps.push_back(root_.file("nvme" + std::to_string(i)));
      std::filesystem::create_directories(ps.back());
    }
    return ps;
  }

  NvmeStoreOptions options(int npaths, std::uint64_t bytes, std::size_t block_size, unsigned qd) {
    NvmeStoreOptions o;
    o.paths = paths(npaths);
    o.rank = 3;
    o.bytes = bytes;
    o.block_size = block_size;
    o.queue_depth = qd;
    o.run_id = "test";
    return o;
  }

  tz::testing::TestDir root_;
};

// ---------------------------------------------------------------- round trips

using Shape = std::tuple<int /*paths*/, std::size_t /*block*/, unsigned /*qd*/>;
class NvmeStoreRoundTrip : public NvmeStoreTest, public ::testing::WithParamInterface<Shape> {};

TEST_P(NvmeStoreRoundTrip, RandomExtentsOfManySizesComeBackBitForBit) {
  auto [npaths, block, qd] = GetParam();
  NvmeStore store(options(npaths, 24 * MiB, block, qd));
  ASSERT_GE(store.capacity(), 24 * MiB);
  // Sizes around block and stripe boundaries: one page, one block minus a page, one block, a whole
  // stripe, a stripe and a bit, and a large extent.
  const std::uint64_t stripe = std::uint64_t(block) * npaths;
  std::vector<std::uint64_t> sizes{4 * KiB, block - 4 * KiB,  block,
                                   stripe,  stripe + 8 * KiB, 5 * MiB + 12 * KiB};
  std::uint64_t offset = 0;
  std::uint64_t seed = 100;
  struct Extent {
    std::uint64_t offset;
    AlignedBuffer data;
  };
  std::vector<Extent> written;
  for (std::uint64_t n : sizes) {
    if (n == 0) continue;
    AlignedBuffer src(n);
    test::fill_random(src.data(), n, seed++);
    store.write_sync(offset, src.data(), n);
    written.push_back({offset, std::move(src)});
    offset += store.extent_bytes(n);
  }
  ASSERT_LE(offset, store.capacity());
  for (auto& e : written) {  // read back after all were written: no extent overwrote another
    AlignedBuffer dst(e.data.bytes());
    std::memset(dst.data(), 0xab, dst.bytes());
    store.read_sync(e.offset, dst.data(), dst.bytes());
    EXPECT_EQ(std::memcmp(dst.data(), e.data.data(), dst.bytes()), 0)
        << "extent at " << e.offset << " of " << dst.bytes() << " bytes";
  }
  if (npaths > 1) {  // the stripes really are spread: consecutive blocks live in different files
    EXPECT_NE(store.locate(0).path, store.locate(block).path);
    EXPECT_EQ(store.locate(0).path, store.locate(stripe).path);
    EXPECT_EQ(store.locate(stripe).file_offset, block);
  }
}

INSTANTIATE_TEST_SUITE_P(PathsBlocksDepths, NvmeStoreRoundTrip,
                         ::testing::Values(Shape{1, 4 * KiB, 1}, Shape{1, 64 * KiB, 8}, Shape{1, MiB, 32},
                                           Shape{3, 4 * KiB, 32}, Shape{3, 128 * KiB, 2}, Shape{3, MiB, 8},
                                           Shape{3, 256 * KiB, 64}),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "paths_" +
                                  std::to_string(std::get<1>(info.param) / KiB) + "KiB_qd" +
                                  std::to_string(std::get<2>(info.param));
                         });

TEST_F(NvmeStoreTest, AsyncWritesAndReadsOverlapAndEachHandleReportsItsOwnExtent) {
  NvmeStore store(options(3, 16 * MiB, 256 * KiB, 8));
  AlignedBuffer src(12 * MiB), dst(12 * MiB);
  test::fill_random(src.data(), src.bytes(), 9);
  std::vector<IoHandle> hs;
  for (int i = 0; i < 12; ++i) hs.push_back(store.write(i * MiB, src.data() + i * MiB, MiB));
  for (auto& h : hs) h.wait();
  hs.clear();
  for (int i = 0; i < 12; ++i) hs.push_back(store.read(i * MiB, dst.data() + i * MiB, MiB));
  for (int i = 12; i-- > 0;) hs[i].wait();
  EXPECT_EQ(std::memcmp(src.data(), dst.data(), src.bytes()), 0);
}

// ---------------------------------------------------------------- faults through the seam

TEST_F(NvmeStoreTest, ShortTransfersEagainAndEintrAreRetriedAndTheBytesAreStillRight) {
  auto o = options(3, 8 * MiB, 128 * KiB, 8);
  o.completion_filter = [](const CompletionInfo& c, int res) {
    switch (c.ordinal % 7) {
      case 1:
        return -EAGAIN;
      case 3:
        return -EINTR;
      case 5:
        return res > int(8 * KiB) ? int(8 * KiB) : res;  // short
      default:
        return res;
    }
  };
  NvmeStore store(std::move(o));
  AlignedBuffer src(6 * MiB + 4 * KiB), dst(6 * MiB + 4 * KiB);
  test::fill_random(src.data(), src.bytes(), 10);
  store.write_sync(0, src.data(), src.bytes());
  store.read_sync(0, dst.data(), dst.bytes());
  EXPECT_EQ(std::memcmp(src.data(), dst.data(), src.bytes()), 0);
  EXPECT_GT(store.stats().retries, 10u);
  EXPECT_GT(store.stats().short_completions, 5u);
}

TEST_F(NvmeStoreTest, AnInjectedReadErrorFailsTheReadWithPathOffsetAndErrno) {
  std::atomic<bool> inject{false};
  auto o = options(1, 4 * MiB, 64 * KiB, 4);
  o.completion_filter = [&](const CompletionInfo& c, int res) {
    return inject && c.op == IoOp::read && c.file_offset == 3 * 64 * KiB ? -EIO : res;
  };
  NvmeStore store(std::move(o));
  AlignedBuffer src(MiB), dst(MiB);
  test::fill_random(src.data(), src.bytes(), 11);
  store.write_sync(0, src.data(), src.bytes());
  inject = true;
  std::string msg = test::error_message([&] { store.read_sync(0, dst.data(), dst.bytes()); });
  EXPECT_NE(msg.find("NVMe read failed: " + store.files()[0] + " at offset 196608, 65536 bytes"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("errno 5 (Input/output error)"), std::string::npos) << msg;
  inject = false;  // the store recovers once the device does
  store.read_sync(0, dst.data(), dst.bytes());
  EXPECT_EQ(std::memcmp(src.data(), dst.data(), src.bytes()), 0);
}

// A write that fails leaves its blocks unreadable (no stale checksum passes a torn block), and a good write
// of them makes them readable again; the checksum is of what landed, so the caller may reuse its buffer once
// the wait returns.
TEST_F(NvmeStoreTest, ABlockWhoseWriteFailedIsRefusedUntilItIsWrittenAgain) {
  std::atomic<bool> inject{false};
  auto o = options(1, 4 * MiB, 64 * KiB, 4);
  o.completion_filter = [&](const CompletionInfo& c, int res) {
    return inject && c.op == IoOp::write && c.file_offset == 2 * 64 * KiB ? -EIO : res;
  };
  NvmeStore store(std::move(o));
  AlignedBuffer src(256 * KiB), dst(256 * KiB);
  test::fill_random(src.data(), src.bytes(), 21);
  store.write_sync(0, src.data(), src.bytes());  // every block written once, good
  inject = true;
  test::fill_random(src.data(), src.bytes(), 22);
  std::string msg = test::error_message([&] { store.write_sync(0, src.data(), src.bytes()); });
  EXPECT_NE(msg.find("NVMe write failed"), std::string::npos) << msg;
  inject = false;
  msg = test::error_message([&] { store.read_sync(2 * 64 * KiB, dst.data(), 64 * KiB); });
  EXPECT_NE(msg.find("block 2 "), std::string::npos) << msg;
  EXPECT_NE(msg.find("its last write failed or was not yet waited for"), std::string::npos) << msg;
  store.write_sync(0, src.data(), src.bytes());
  AlignedBuffer kept(256 * KiB);
  std::memcpy(kept.data(), src.data(), src.bytes());
  test::fill_random(src.data(), src.bytes(), 23);  // the caller reuses its buffer after the wait
  store.read_sync(0, dst.data(), dst.bytes());
  EXPECT_EQ(std::memcmp(kept.data(), dst.data(), dst.bytes()), 0);
}

// ---------------------------------------------------------------- checksums

// Corrupts one byte of the block at logical `offset`, behind the store's back, through an ordinary
// (buffered) descriptor.
void flip_a_byte(const NvmeStore& store, std::uint64_t offset) {
  auto loc = store.locate(offset);
  int fd = ::open(loc.path->c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  unsigned char b = 0;
  ASSERT_EQ(::pread(fd, &b, 1, off_t(loc.file_offset + 1234)), 1);
  b ^= 0x10;
  ASSERT_EQ(::pwrite(fd, &b, 1, off_t(loc.file_offset + 1234)), 1);
  ASSERT_EQ(::fsync(fd), 0);
  ::close(fd);
}

TEST_F(NvmeStoreTest, AByteFlippedOnDiskIsCaughtOnReadWithPathOffsetAndBlock) {
  NvmeStore store(options(3, 8 * MiB, 64 * KiB, 8));
  AlignedBuffer src(2 * MiB), dst(2 * MiB);
  test::fill_random(src.data(), src.bytes(), 12);
  store.write_sync(0, src.data(), src.bytes());
  flip_a_byte(store, 7 * 64 * KiB);
  if (HasFatalFailure()) return;
  auto loc = store.locate(7 * 64 * KiB);
  std::string msg = test::error_message([&] { store.read_sync(0, dst.data(), dst.bytes()); });
  EXPECT_NE(msg.find("checksum mismatch reading NVMe block 7 (logical offset 458752, 65536 bytes) in " +
                     *loc.path + " at offset " + std::to_string(loc.file_offset)),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("refused"), std::string::npos) << msg;
  // The other blocks are fine on their own.
  store.read_sync(0, dst.data(), 7 * 64 * KiB);
  EXPECT_EQ(std::memcmp(src.data(), dst.data(), 7 * 64 * KiB), 0);
}

TEST_F(NvmeStoreTest, ManyThreadsWaitingAtOnceEachVerifyTheirExtentAndOnlyTheCorruptOneFails) {
  NvmeStore store(options(3, 8 * MiB, 64 * KiB, 8));
  constexpr int kExtents = 16;
  const std::size_t each = 256 * KiB;
  AlignedBuffer src(kExtents * each), dst(kExtents * each);
  test::fill_random(src.data(), src.bytes(), 14);
  store.write_sync(0, src.data(), src.bytes());
  flip_a_byte(store, 5 * each + 2 * 64 * KiB);  // block 22, the third of extent 5
  if (HasFatalFailure()) return;
  std::vector<IoHandle> hs;
  for (int i = 0; i < kExtents; ++i) hs.push_back(store.read(i * each, dst.data() + i * each, each));
  std::vector<std::string> errors(kExtents);
  std::vector<std::thread> waiters;
  for (int i = 0; i < kExtents; ++i)
    waiters.emplace_back([&, i] {
      try {
        hs[i].wait();
      } catch (const Error& e) {
        errors[i] = e.what();
      }
    });
  for (auto& w : waiters) w.join();
  for (int i = 0; i < kExtents; ++i) {
    if (i == 5) {
      EXPECT_NE(errors[i].find("checksum mismatch reading NVMe block 22 (logical offset 1441792"),
                std::string::npos)
          << errors[i];
      continue;
    }
    EXPECT_EQ(errors[i], "") << "extent " << i;
    EXPECT_EQ(std::memcmp(src.data() + i * each, dst.data() + i * each, each), 0) << "extent " << i;
  }
}

TEST_F(NvmeStoreTest, ReadingABlockThatWasNeverWrittenIsRefused) {
  NvmeStore store(options(1, 4 * MiB, 64 * KiB, 4));
  AlignedBuffer dst(64 * KiB);
  std::string msg = test::error_message([&] { store.read_sync(MiB, dst.data(), dst.bytes()); });
  EXPECT_NE(msg.find("block 16 "), std::string::npos) << msg;
  EXPECT_NE(msg.find("never written"), std::string::npos) << msg;
}

TEST_F(NvmeStoreTest, ABlockIsReadBackWithTheLengthItWasWrittenWith) {
  NvmeStore store(options(1, 4 * MiB, 64 * KiB, 4));
  AlignedBuffer src(64 * KiB), dst(64 * KiB);
  test::fill_random(src.data(), src.bytes(), 13);
  store.write_sync(0, src.data(), 8 * KiB);
  std::string msg = test::error_message([&] { store.read_sync(0, dst.data(), 64 * KiB); });
  EXPECT_NE(msg.find("written with 8192 bytes"), std::string::npos) << msg;
  store.read_sync(0, dst.data(), 8 * KiB);
  EXPECT_EQ(std::memcmp(src.data(), dst.data(), 8 * KiB), 0);
}

TEST_F(NvmeStoreTest, WithChecksumsOffNothingIsHashedOrVerified) {
  auto o = options(1, 4 * MiB, 64 * KiB, 4);
  o.checksums = Checksums::off;
  NvmeStore store(std::move(o));
  EXPECT_FALSE(store.checksums());
  AlignedBuffer dst(64 * KiB);
  store.read_sync(0, dst.data(), dst.bytes());  // unwritten, preallocated: zeros, and no complaint
  for (std::size_t i = 0; i < dst.bytes(); ++i) ASSERT_EQ(dst.data()[i], std::byte{0});
}

// ---------------------------------------------------------------- files, space, arguments

TEST_F(NvmeStoreTest, FilesAre0600InA0700PerRunDirectoryAndAreRemovedWithTheStore) {
  std::vector<std::string> dirs, files;
  {
    NvmeStore store(options(3, 6 * MiB, MiB, 8));
    dirs = store.directories();
    files = store.files();
    ASSERT_EQ(dirs.size(), 3u);
    ASSERT_EQ(files.size(), 3u);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(dirs[i], root_.file("nvme" + std::to_string(i)) + "/tierzero-test-r3");
      struct stat st {};
      ASSERT_EQ(::stat(dirs[i].c_str(), &st), 0);
      EXPECT_EQ(st.st_mode & 0777, 0700u);
      ASSERT_EQ(::stat(files[i].c_str(), &st), 0);
      EXPECT_EQ(st.st_mode & 0777, 0600u);
      EXPECT_EQ(std::uint64_t(st.st_size), 2 * MiB);  // 6 MiB striped over 3 files
      EXPECT_GE(std::uint64_t(st.st_blocks) * 512, 2 * MiB) << "preallocated";
    }
    // A second store with the same run id and rank would share the files: refused.
    std::string msg = test::error_message([&] { NvmeStore again(options(1, MiB, MiB, 8)); });
    EXPECT_NE(msg.find("already exists"), std::string::npos) << msg;
  }
  for (const auto& f : files) EXPECT_FALSE(std::filesystem::exists(f)) << f;
  for (const auto& d : dirs) EXPECT_FALSE(std::filesystem::exists(d)) << d;
}

TEST_F(NvmeStoreTest, AFullDiskIsReportedAtConstructionWithTheNeedAndTheFreeSpace) {
  std::string mnt = root_.file("small");
  std::filesystem::create_directories(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=8m") != 0)
    GTEST_SKIP() << "cannot mount an 8 MiB tmpfs at " << mnt << ": " << std::strerror(errno)
                 << " (needs root)";
  struct Unmount {
    std::string at;
    ~Unmount() { ::umount2(at.c_str(), MNT_DETACH); }
  } unmount{mnt};
  NvmeStoreOptions o;
  o.paths = {mnt};
  o.bytes = 64 * MiB;
  o.run_id = "full";
  std::string msg = test::error_message([&] { NvmeStore store(o); });
  EXPECT_NE(msg.find("not enough space for rank 0's NVMe store on " + mnt), std::string::npos) << msg;
  EXPECT_NE(msg.find("need 64.00 MiB"), std::string::npos) << msg;
  EXPECT_NE(msg.find("free 8.00 MiB"), std::string::npos) << msg;
  EXPECT_TRUE(std::filesystem::is_empty(mnt)) << "nothing is left behind";
  // Two paths on the same filesystem share its free space: 2 x 5 MiB does not fit in 8 MiB.
  std::filesystem::create_directories(mnt + "/a");
  std::filesystem::create_directories(mnt + "/b");
  o.paths = {mnt + "/a", mnt + "/b"};
  o.bytes = 10 * MiB;
  msg = test::error_message([&] { NvmeStore store(o); });
  EXPECT_NE(msg.find("need 10.00 MiB"), std::string::npos) << msg;
  // What fits is preallocated, and then the disk has no room left for anyone else.
  o.paths = {mnt};
  o.bytes = 6 * MiB;
  o.block_size = 64 * KiB;
  NvmeStore store(o);
  AlignedBuffer src(6 * MiB), dst(6 * MiB);
  test::fill_random(src.data(), src.bytes(), 14);
  store.write_sync(0, src.data(), src.bytes());
  store.read_sync(0, dst.data(), dst.bytes());
  EXPECT_EQ(std::memcmp(src.data(), dst.data(), src.bytes()), 0);
}

TEST_F(NvmeStoreTest, ExtentsMustBeAlignedAndInsideTheStore) {
  NvmeStore store(options(2, 4 * MiB, 64 * KiB, 4));
  AlignedBuffer buf(128 * KiB);
  EXPECT_NE(test::error_message([&] {
              store.write(4096, buf.data(), 4096);
            }).find("not a multiple of the block size"),
            std::string::npos);
  EXPECT_NE(test::error_message([&] { store.write(0, buf.data(), 100); }).find("O_DIRECT"),
            std::string::npos);
  EXPECT_NE(test::error_message([&] {
              store.read(4 * MiB, buf.data(), 64 * KiB);
            }).find("past the store's capacity"),
            std::string::npos);
}

TEST_F(NvmeStoreTest, AMissingPathIsReportedByName) {
  NvmeStoreOptions o;
  o.paths = {root_.file("does-not-exist")};
  o.bytes = MiB;
  o.run_id = "x";
  std::string msg = test::error_message([&] { NvmeStore store(o); });
  EXPECT_NE(msg.find(root_.file("does-not-exist")), std::string::npos) << msg;
}

}  // namespace
}  // namespace tz

namespace tz {
namespace {

// ---------------------------------------------------------------- stores left behind

// A store whose owner died (its lock file can be taken) is removed by the next store on the path; a
// store whose lock is held (a live job) is left alone, and so is anything not named like a store.
TEST_F(NvmeStoreTest, AStoreLeftByADeadRunIsRemovedAndALiveJobsStoreIsNot) {
  auto o = options(1, 4 * MiB, 64 * KiB, 4);
  const std::string p = o.paths[0];
  auto fake_store = [&](const std::string& id) {
    const std::string dir = p + "/tierzero-" + id + "-r0";
    std::filesystem::create_directory(dir);
    std::ofstream(dir + "/store.dat") << std::string(8192, 'x');
    std::ofstream(dir + ".lock") << "host elsewhere, pid 4242\n";
    return dir;
  };
  const std::string dead = fake_store("dead"), live = fake_store("live");
  std::filesystem::create_directory(p + "/not-a-store");
  const int held = ::open((live + ".lock").c_str(), O_RDWR);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX | LOCK_NB), 0);  // as the live job's store does

  ::testing::internal::CaptureStderr();
  {
    NvmeStore store(std::move(o));
    EXPECT_TRUE(std::filesystem::exists(store.directories()[0] + ".lock")) << "a store holds a lock file";
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("removed NVMe store " + dead + " (8.00 KiB) left behind by a run that ended without cleaning "
                     "up (host elsewhere, pid 4242)"),
            std::string::npos)
      << log;
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_FALSE(std::filesystem::exists(dead + ".lock"));
  EXPECT_TRUE(std::filesystem::exists(live + "/store.dat")) << "a live job's store is never touched";
  EXPECT_TRUE(std::filesystem::exists(p + "/not-a-store"));
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(p)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"not-a-store", "tierzero-live-r0", "tierzero-live-r0.lock"}))
      << "the new store removed its own folder and lock";
  ::close(held);
}

}  // namespace
}  // namespace tz
