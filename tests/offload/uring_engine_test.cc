// Tests offload/uring_engine.h: the io_uring engine moves striped extents intact, resumes short and
// interrupted transfers, turns errors into tz::Error with path/offset/errno, and never hangs. Faults
// come through the engine's completion filter (its test seam).
#include "offload/uring_engine.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "core/host_memory.h"
#include "tests/common/test_dir.h"
#include "tests/offload/direct_io_probe.h"

namespace tz {
namespace {

constexpr std::size_t KiB = 1024, MiB = 1024 * KiB;

class UringEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why = test::direct_io_unsupported(dir_.path());
    if (!why.empty()) GTEST_SKIP() << why;
  }

  // `nfiles` O_DIRECT files of `file_bytes` each, striped by the engine.
  std::unique_ptr<UringEngine> make(std::size_t nfiles, std::uint64_t file_bytes, UringEngineOptions opt) {
    std::vector<FileDescriptor> fds;
    for (std::size_t i = 0; i < nfiles; ++i) {
      auto fd = FileDescriptor::open(dir_.file("f" + std::to_string(i)), O_RDWR | O_CREAT | O_DIRECT, 0600);
      EXPECT_EQ(::ftruncate(fd.get(), off_t(file_bytes)), 0);
      fds.push_back(std::move(fd));
    }
    return std::make_unique<UringEngine>(std::move(fds), std::move(opt));
  }

  // Writes random bytes through the engine, reads them back into another buffer, compares.
  void round_trip(UringEngine& e, std::uint64_t offset, std::size_t bytes, std::uint64_t seed) {
    AlignedBuffer src(bytes), dst(bytes);
    test::fill_random(src.data(), bytes, seed);
    std::memset(dst.data(), 0, bytes);
    e.submit(IoOp::write, offset, src.data(), bytes).wait();
    e.submit(IoOp::read, offset, dst.data(), bytes).wait();
    EXPECT_EQ(std::memcmp(src.data(), dst.data(), bytes), 0) << "offset " << offset << " bytes " << bytes;
  }

  tz::testing::TestDir dir_;
};

TEST_F(UringEngineTest, BlocksAreStripedRoundRobinOverTheFiles) {
  UringEngineOptions o;
  o.block_size = 64 * KiB;
  auto e = make(3, MiB, o);
  EXPECT_EQ(e->locate(0), std::make_pair(std::size_t(0), std::uint64_t(0)));
  EXPECT_EQ(e->locate(64 * KiB), std::make_pair(std::size_t(1), std::uint64_t(0)));
  EXPECT_EQ(e->locate(2 * 64 * KiB + 4096), std::make_pair(std::size_t(2), std::uint64_t(4096)));
  EXPECT_EQ(e->locate(3 * 64 * KiB), std::make_pair(std::size_t(0), std::uint64_t(64 * KiB)));
  round_trip(*e, 0, 3 * MiB - 64 * KiB, 1);
}

TEST_F(UringEngineTest, ShortTransfersAreResumedFromTheLastAlignedByteAndTheDataIsRight) {
  UringEngineOptions o;
  o.block_size = 256 * KiB;
  o.queue_depth = 4;
  std::atomic<int> shortened{0};
  // Every other completion reports less than the kernel moved: half (aligned), 1000 bytes (less than
  // one sector: no progress, resubmitted whole), or all but 100 bytes (unaligned: the tail sector redone).
  o.completion_filter = [&](const CompletionInfo& c, int res) {
    if (res <= 0 || c.ordinal % 2 == 1) return res;
    ++shortened;
    switch ((c.ordinal / 2) % 3) {
      case 0: {
        int half = int(c.length / 2 / kDirectIoAlign * kDirectIoAlign);
        return half > 0 && half < res ? half : res;
      }
      case 1:
        return std::min(res, 1000);
      default:
        return res > 100 ? res - 100 : res;
    }
  };
  auto e = make(2, 8 * MiB, o);
  round_trip(*e, 0, 4 * MiB + 12 * KiB, 2);
  EXPECT_GT(shortened.load(), 10);
  EXPECT_GT(e->stats().short_completions, 10u);
}

TEST_F(UringEngineTest, EagainAndEintrAreResubmittedAndTheDataIsRight) {
  UringEngineOptions o;
  o.block_size = 64 * KiB;
  o.queue_depth = 8;
  o.completion_filter = [](const CompletionInfo& c, int res) {
    if (c.ordinal % 5 == 1) return -EAGAIN;
    if (c.ordinal % 5 == 3) return -EINTR;
    return res;
  };
  auto e = make(3, 4 * MiB, o);
  round_trip(*e, 128 * KiB, 5 * MiB, 3);
  EXPECT_GT(e->stats().retries, 20u);
}

TEST_F(UringEngineTest, AnInjectedEioFailsTheExtentWithPathOffsetLengthAndErrno) {
  UringEngineOptions o;
  o.block_size = 64 * KiB;
  o.queue_depth = 4;
  o.completion_filter = [](const CompletionInfo& c, int res) { return c.ordinal == 5 ? -EIO : res; };
  auto e = make(1, 4 * MiB, o);
  AlignedBuffer buf(MiB);
  test::fill_random(buf.data(), buf.bytes(), 4);
  std::string msg = test::error_message([&] { e->submit(IoOp::write, 0, buf.data(), buf.bytes()).wait(); });
  EXPECT_NE(msg.find("NVMe write failed: " + dir_.file("f0") + " at offset "), std::string::npos) << msg;
  EXPECT_NE(msg.find(", 65536 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("errno 5 (Input/output error)"), std::string::npos) << msg;
  // The engine is still usable after a failed extent.
  round_trip(*e, 0, MiB, 5);
}

TEST_F(UringEngineTest, AReadThatReturnsZeroBeforeItsEndIsAnErrorNotARetry) {
  UringEngineOptions o;
  o.block_size = 64 * KiB;
  auto e = make(1, 64 * KiB, o);  // the file holds one block; the read asks for two
  AlignedBuffer buf(128 * KiB);
  std::string msg = test::error_message([&] { e->submit(IoOp::read, 0, buf.data(), buf.bytes()).wait(); });
  EXPECT_NE(msg.find("returned 0 bytes (end of file"), std::string::npos) << msg;
  EXPECT_NE(msg.find(dir_.file("f0") + " at offset 65536"), std::string::npos) << msg;
  EXPECT_EQ(e->stats().retries, 0u);
}

TEST_F(UringEngineTest, ACompletionThatNeverProgressesFailsAfterTheRetryLimitInsteadOfSpinning) {
  UringEngineOptions o;
  o.block_size = 64 * KiB;
  o.max_retries = 7;
  o.completion_filter = [](const CompletionInfo&, int) { return -EAGAIN; };
  auto e = make(1, MiB, o);
  AlignedBuffer buf(64 * KiB);
  std::string msg = test::error_message([&] { e->submit(IoOp::write, 0, buf.data(), buf.bytes()).wait(); });
  EXPECT_NE(msg.find("made no progress after 7 retries"), std::string::npos) << msg;
  EXPECT_NE(msg.find("errno 11"), std::string::npos) << msg;
}

TEST_F(UringEngineTest, ManyExtentsInFlightAtOnceShareTheQueueAndAllArriveIntact) {
  UringEngineOptions o;
  o.block_size = 32 * KiB;
  o.queue_depth = 16;
  auto e = make(3, 8 * MiB, o);
  constexpr int kExtents = 12;
  const std::size_t each = 512 * KiB;
  AlignedBuffer src(kExtents * each), dst(kExtents * each);
  test::fill_random(src.data(), src.bytes(), 6);
  std::vector<IoHandle> hs;
  for (int i = 0; i < kExtents; ++i)
    hs.push_back(e->submit(IoOp::write, i * each, src.data() + i * each, each));
  for (int i = kExtents; i-- > 0;) hs[i].wait();  // waiting out of order is fine
  hs.clear();
  for (int i = 0; i < kExtents; ++i)
    hs.push_back(e->submit(IoOp::read, i * each, dst.data() + i * each, each));
  for (auto& h : hs) h.wait();
  EXPECT_EQ(std::memcmp(src.data(), dst.data(), src.bytes()), 0);
}

// Counts the blocks its waiters verified.
class CountingHooks : public BlockHooks {
 public:
  void before_write(std::uint64_t, const std::byte*, std::size_t) override { ++marked; }
  void after_write(std::uint64_t, const std::byte*, std::size_t) override { ++recorded; }
  void after_read(std::uint64_t, const std::byte*, std::size_t) const override { ++verified; }
  mutable std::atomic<int> verified{0};
  std::atomic<int> marked{0}, recorded{0};
};

TEST_F(UringEngineTest, AReadsWaiterVerifiesItsBlocksAsTheyLandNotAfterTheWholeExtent) {
  CountingHooks hooks;
  bool seven_verified_before_the_last_landed = false;
  UringEngineOptions o;
  o.block_size = 64 * KiB;
  o.queue_depth = 1;  // the blocks land one by one, in order
  o.hooks = &hooks;
  // The read's last block completes only once its waiter has verified the seven before it (or 10 s).
  o.completion_filter = [&](const CompletionInfo& c, int res) {
    if (c.op == IoOp::read && c.file_offset == 7 * 64 * KiB) {
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (hooks.verified.load() < 7 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      seven_verified_before_the_last_landed = hooks.verified.load() == 7;
    }
    return res;
  };
  auto e = make(1, MiB, o);
  AlignedBuffer src(512 * KiB), dst(512 * KiB);
  test::fill_random(src.data(), src.bytes(), 8);
  e->submit(IoOp::write, 0, src.data(), src.bytes()).wait();
  e->submit(IoOp::read, 0, dst.data(), dst.bytes()).wait();
  EXPECT_TRUE(seven_verified_before_the_last_landed);
  EXPECT_EQ(hooks.verified.load(), 8);
  EXPECT_EQ(hooks.marked.load(), 8);  // the write's 8 blocks: marked by the engine, recorded by the waiter
  EXPECT_EQ(hooks.recorded.load(), 8);
  EXPECT_EQ(std::memcmp(src.data(), dst.data(), src.bytes()), 0);
}

TEST_F(UringEngineTest, RegisteredBuffersAreUsedWhenTheKernelAllowsOtherwiseTheReasonIsGiven) {
  UringEngineOptions o;
  o.block_size = 64 * KiB;
  auto e = make(1, 4 * MiB, o);
  AlignedBuffer src(MiB, Pinning::best_effort), dst(MiB, Pinning::best_effort);
  std::span<std::byte> regions[] = {{src.data(), src.bytes()}, {dst.data(), dst.bytes()}};
  std::string why = e->register_buffers(regions);
  test::fill_random(src.data(), src.bytes(), 7);
  e->submit(IoOp::write, 0, src.data(), src.bytes()).wait();
  e->submit(IoOp::read, 0, dst.data(), dst.bytes()).wait();
  EXPECT_EQ(std::memcmp(src.data(), dst.data(), src.bytes()), 0);
  if (!why.empty()) {
    EXPECT_FALSE(e->fixed_buffers());
    EXPECT_EQ(e->stats().fixed_ops, 0u);
    GTEST_SKIP() << "registered buffers refused, plain ops used: " << why;
  }
  EXPECT_TRUE(e->fixed_buffers());
  EXPECT_EQ(e->stats().fixed_ops, 32u);
  EXPECT_EQ(e->stats().plain_ops, 0u);
}

TEST_F(UringEngineTest, MisalignedRequestsAreRefusedBeforeAnythingIsSubmitted) {
  UringEngineOptions o;
  o.block_size = 64 * KiB;
  auto e = make(1, MiB, o);
  AlignedBuffer buf(128 * KiB);
  EXPECT_NE(test::error_message([&] {
              e->submit(IoOp::read, 4096, buf.data(), 4096);
            }).find("not a multiple of the block size"),
            std::string::npos);
  EXPECT_NE(
      test::error_message([&] { e->submit(IoOp::read, 0, buf.data(), 1000); }).find("pad the allocation"),
      std::string::npos);
  EXPECT_NE(
      test::error_message([&] { e->submit(IoOp::read, 0, buf.data() + 512, 4096); }).find("not aligned"),
      std::string::npos);
}

TEST_F(UringEngineTest, DestroyingTheEngineWithExtentsQueuedFailsThemInsteadOfHanging) {
  UringEngineOptions o;
  o.block_size = 4 * KiB;
  o.queue_depth = 1;
  auto e = make(1, 8 * MiB, o);
  AlignedBuffer buf(8 * MiB);
  std::vector<IoHandle> hs;
  for (int i = 0; i < 8; ++i) hs.push_back(e->submit(IoOp::write, i * MiB, buf.data() + i * MiB, MiB));
  e.reset();
  int failed = 0;
  for (auto& h : hs) {
    try {
      h.wait();
    } catch (const Error& err) {
      ++failed;
      EXPECT_NE(std::string(err.what()).find("shut down"), std::string::npos) << err.what();
    }
  }
  EXPECT_GT(failed, 0);
}

}  // namespace
}  // namespace tz
