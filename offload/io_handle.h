// One extent submitted to a UringEngine: its operation, the request the engine thread fills in, and the
// caller's handle that waits for it and verifies what landed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "core/error.h"  // IoHandle::wait() throws tz::Error

namespace tz {

enum class IoOp : std::uint8_t { read, write };
const char* io_op_name(IoOp op);

// Per-block callbacks; NvmeStore keeps its checksums here. A tz::Error thrown from either fails the
// extent the block belongs to, and nothing else.
class BlockHooks {
 public:
  virtual ~BlockHooks() = default;
  // On the engine's thread, before the block is submitted for writing: cheap, it stays on the ring's path
  // (NvmeStore marks the block unreadable until after_write records what landed).
  virtual void before_write(std::uint64_t block, const std::byte* data, std::size_t len) = 0;
  // On the thread that waits for a write (as after_read for a read), block by block as they land, all
  // before wait() returns: NvmeStore's checksum of what landed, taken off the engine's thread from the
  // caller's buffer, which must not change until the write's wait returns. Called from several threads
  // at once for different blocks.
  virtual void after_write(std::uint64_t block, const std::byte* data, std::size_t len) = 0;
  // On the thread that waits for the extent (IoHandle::wait, or the destructor of a handle never
  // waited), block by block in order as they land (while the extent's later blocks are still moving,
  // and while each is likely still in cache), all before wait() returns: off the engine's thread, so
  // many waiters verify at once while the engine keeps the queue full. Must be safe to call from
  // several threads at once.
  virtual void after_read(std::uint64_t block, const std::byte* data, std::size_t len) const = 0;
};

namespace detail {
// One submitted extent. The fields up to `hooks` are set at submission and never change. The rest
// other than `progress` belong to the engine thread until it sets kClosed there (release); the
// waiter reads `failed` and `error` only after seeing it (acquire), and never writes them: the
// engine may still read them until it forgets the request.
struct IoRequest {
  static constexpr std::uint64_t kClosed = std::uint64_t(1) << 63;

  IoOp op = IoOp::read;
  std::uint64_t offset = 0;  // logical, a multiple of block_size
  std::uint64_t bytes = 0;
  std::byte* buf = nullptr;
  std::uint64_t first_block = 0;
  std::uint64_t nblocks = 0;
  std::size_t block_size = 0;
  // With checksums: after_read (a read) or after_write (a write) on every block that landed, by the waiter.
  BlockHooks* hooks = nullptr;
  std::uint64_t next = 0;      // next block to issue
  std::uint64_t inflight = 0;  // issued, not yet finished (in the kernel or resuming)
  std::uint64_t finished = 0;
  bool failed = false;
  bool closed = false;  // kClosed was set; the engine forgets it
  std::string error;
  // Blocks [0, progress & ~kClosed) have landed whole (the engine raises it, release); kClosed: the
  // engine is done with the extent (every block landed, or it failed) and with the caller's buffer.
  std::atomic<std::uint64_t> progress{0};
};

// Waits until the engine is done with the extent, verifying its blocks as they land; returns the
// request's error, or else the first block (lowest offset) that `hooks` refuses, or "" when every
// block landed and passed. Runs on the caller's thread.
std::string await_verified(IoRequest& r);
}  // namespace detail

// The caller's side of one submitted extent. wait() blocks until every block has landed, verifying
// them on the calling thread as they land (a read with checksums), then throws the request's
// tz::Error if it failed: the caller never sees data that was not verified. Move-only; destroying an
// unwaited handle waits (the kernel may still be writing into the caller's buffer), verifies, and
// logs a failure.
class IoHandle {
 public:
  IoHandle() = default;
  explicit IoHandle(std::shared_ptr<detail::IoRequest> r) : req_(std::move(r)) {}
  ~IoHandle();
  IoHandle(const IoHandle&) = delete;
  IoHandle& operator=(const IoHandle&) = delete;
  IoHandle(IoHandle&&) noexcept = default;
  IoHandle& operator=(IoHandle&& o) noexcept;

  void wait();
  // Every block has landed: wait() will not block on the device (it still verifies what landed).
  bool ready() const;
  bool valid() const { return req_ != nullptr; }

 private:
  std::shared_ptr<detail::IoRequest> req_;
};

}  // namespace tz
