// Tests offload/io_handle.h: wait() verifies a read's landed blocks on the waiting thread before it
// returns, reports the first refused block (or the engine's own error) as a tz::Error, and a handle
// never waited still verifies before it lets the buffer go. Requests are made by hand: no ring needed.
#include "offload/io_handle.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/error_message.h"

namespace tz {
namespace {

// Records which thread checked which block; refuses one block if asked.
class RecordingHooks : public BlockHooks {
 public:
  explicit RecordingHooks(std::uint64_t refuse = ~std::uint64_t(0)) : refuse_(refuse) {}
  void before_write(std::uint64_t, const std::byte*, std::size_t) override {}
  void after_write(std::uint64_t block, const std::byte*, std::size_t len) override {
    std::lock_guard lk(mu_);
    written_.push_back({block, len, std::this_thread::get_id()});
  }
  void after_read(std::uint64_t block, const std::byte*, std::size_t len) const override {
    std::lock_guard lk(mu_);
    seen_.push_back({block, len, std::this_thread::get_id()});
    if (block == refuse_) TZ_FAIL("block ", block, " refused");
  }
  struct Seen {
    std::uint64_t block;
    std::size_t len;
    std::thread::id thread;
  };
  std::vector<Seen> seen() const {
    std::lock_guard lk(mu_);
    return seen_;
  }
  std::vector<Seen> written() const {
    std::lock_guard lk(mu_);
    return written_;
  }

 private:
  std::uint64_t refuse_;
  mutable std::mutex mu_;
  mutable std::vector<Seen> seen_;
  std::vector<Seen> written_;
};

// A read of `bytes` at block `first` in blocks of 64 KiB that has landed (done) with verification.
std::shared_ptr<detail::IoRequest> landed_read(BlockHooks* hooks, std::uint64_t first, std::uint64_t bytes) {
  auto r = std::make_shared<detail::IoRequest>();
  r->op = IoOp::read;
  r->block_size = 64 * 1024;
  r->first_block = first;
  r->offset = first * r->block_size;
  r->bytes = bytes;
  r->nblocks = (bytes + r->block_size - 1) / r->block_size;
  r->hooks = hooks;
  r->closed = true;
  r->progress.store(r->nblocks | detail::IoRequest::kClosed);
  return r;
}

TEST(IoHandle, WaitVerifiesEveryBlockOnTheWaitingThreadWithItsLength) {
  RecordingHooks hooks;
  IoHandle h(landed_read(&hooks, 5, 3 * 64 * 1024 + 4096));
  EXPECT_TRUE(h.ready());
  EXPECT_TRUE(hooks.seen().empty());  // landed is not verified: that is wait()'s work
  h.wait();
  auto seen = hooks.seen();
  ASSERT_EQ(seen.size(), 4u);
  for (std::uint64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(seen[i].block, 5 + i);
    EXPECT_EQ(seen[i].thread, std::this_thread::get_id());
  }
  EXPECT_EQ(seen[3].len, 4096u);
  h.wait();  // a second wait() is a no-op: nothing is verified twice
  EXPECT_EQ(hooks.seen().size(), 4u);
}

// A write's blocks are recorded (after_write, the store's checksums) by its waiter as they land, each once,
// and only those that landed: never after_read.
TEST(IoHandle, AWritesWaiterRecordsTheBlocksThatLandedOnItsOwnThread) {
  RecordingHooks hooks;
  auto r = landed_read(&hooks, 3, 3 * 64 * 1024 + 8192);
  r->op = IoOp::write;
  IoHandle h(r);
  h.wait();
  auto written = hooks.written();
  ASSERT_EQ(written.size(), 4u);
  for (std::uint64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(written[i].block, 3 + i);
    EXPECT_EQ(written[i].thread, std::this_thread::get_id());
  }
  EXPECT_EQ(written[3].len, 8192u);
  EXPECT_TRUE(hooks.seen().empty());
  h.wait();
  EXPECT_EQ(hooks.written().size(), 4u);
  // A write that failed after its first 2 blocks landed: those 2 recorded, the engine's error reported.
  RecordingHooks failed_hooks;
  auto f = landed_read(&failed_hooks, 0, 4 * 64 * 1024);
  f->op = IoOp::write;
  f->failed = true;
  f->error = "NVMe write failed: errno 28";
  f->progress.store(2 | detail::IoRequest::kClosed);
  IoHandle fh(std::move(f));
  EXPECT_EQ(tz::testing::error_message([&] { fh.wait(); }), "NVMe write failed: errno 28");
  ASSERT_EQ(failed_hooks.written().size(), 2u);
  EXPECT_EQ(failed_hooks.written()[1].block, 1u);
  // A write never waited records its blocks before the handle lets the buffer go.
  RecordingHooks dropped_hooks;
  {
    auto d = landed_read(&dropped_hooks, 0, 2 * 64 * 1024);
    d->op = IoOp::write;
    IoHandle dh(std::move(d));
  }
  EXPECT_EQ(dropped_hooks.written().size(), 2u);
}

TEST(IoHandle, ARefusedBlockFailsTheWaitWithTheVerifiersMessage) {
  RecordingHooks hooks(7);
  IoHandle h(landed_read(&hooks, 5, 4 * 64 * 1024));
  EXPECT_NE(tz::testing::error_message([&] { h.wait(); }).find("block 7 refused"), std::string::npos);
}

TEST(IoHandle, TheEnginesErrorIsTheOneReportedWhateverTheLandedBlocksGive) {
  RecordingHooks hooks(1);  // block 1 landed but is refused; block 2 failed in the kernel
  auto r = landed_read(&hooks, 0, 4 * 64 * 1024);
  r->failed = true;
  r->error = "NVMe read failed: errno 5";
  r->progress.store(2 | detail::IoRequest::kClosed);  // blocks 0 and 1 landed
  IoHandle h(std::move(r));
  EXPECT_EQ(tz::testing::error_message([&] { h.wait(); }), "NVMe read failed: errno 5");
}

TEST(IoHandle, BlocksAreVerifiedAsTheLandedPrefixGrowsAndNotBeyondIt) {
  RecordingHooks hooks;
  auto r = landed_read(&hooks, 0, 4 * 64 * 1024);
  r->progress.store(0);  // in flight
  std::atomic<bool> returned{false};
  std::thread waiter([&, h = IoHandle(r)]() mutable {
    h.wait();
    returned = true;
  });
  r->progress.store(2);  // blocks 0 and 1 landed: the waiter checks them and waits for more
  r->progress.notify_all();
  for (int i = 0; i < 10000 && hooks.seen().size() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(hooks.seen().size(), 2u);
  EXPECT_FALSE(returned.load());
  r->progress.store(4 | detail::IoRequest::kClosed);
  r->progress.notify_all();
  waiter.join();
  EXPECT_EQ(hooks.seen().size(), 4u);
}

TEST(IoHandle, AHandleNeverWaitedStillVerifiesBeforeItLetsGo) {
  RecordingHooks hooks(2);
  { IoHandle h(landed_read(&hooks, 0, 4 * 64 * 1024)); }  // logs "block 2 refused"; never throws
  EXPECT_EQ(hooks.seen().size(), 3u);  // blocks 0, 1, 2: the first refusal ends the check
}

TEST(IoHandle, ManyThreadsWaitingAtOnceEachVerifyTheirOwnExtent) {
  RecordingHooks hooks;
  constexpr int kThreads = 8, kBlocks = 16;
  std::vector<IoHandle> hs;
  for (int t = 0; t < kThreads; ++t) hs.emplace_back(landed_read(&hooks, t * kBlocks, kBlocks * 64 * 1024));
  std::vector<std::thread::id> ids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      ids[t] = std::this_thread::get_id();
      hs[t].wait();
    });
  for (auto& th : threads) th.join();
  auto seen = hooks.seen();
  ASSERT_EQ(seen.size(), std::size_t(kThreads * kBlocks));
  std::vector<int> count(kThreads * kBlocks, 0);
  for (const auto& s : seen) {
    ++count[s.block];
    EXPECT_EQ(s.thread, ids[s.block / kBlocks]) << "block " << s.block;
  }
  for (int c : count) EXPECT_EQ(c, 1);
}

}  // namespace
}  // namespace tz
