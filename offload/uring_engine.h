// UringEngine: moves whole extents between host memory and one or more (striped) O_DIRECT files with
// io_uring at a fixed queue depth, on one thread of its own.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.h"  // submit() throws tz::Error
#include "offload/file_descriptor.h"
#include "offload/io_handle.h"
#include "offload/uring_ring.h"

namespace tz {

// What the test seam sees of one completion.
struct CompletionInfo {
  std::uint64_t ordinal;  // 0, 1, 2... over the engine's life, in the order completions are reaped
  IoOp op;
  const std::string* path;
  std::uint64_t file_offset;  // where this (possibly resumed) request started
  std::uint32_t length;       // what it asked for
};
// Test seam: returns the result the engine should act on instead of the kernel's `res` (a short
// count, -EAGAIN, -EINTR, -EIO, 0...). Passed to the engine, never global; runs on its thread.
using CompletionFilter = std::function<int(const CompletionInfo& info, int res)>;

struct UringEngineOptions {
  std::size_t block_size = std::size_t(1) << 20;  // aio.block_size: one request per block, stripe unit
  unsigned queue_depth = 8;                       // aio.queue_depth: requests in flight at most
  // A block that completes with -EAGAIN, -EINTR or no usable progress this many times in a row
  // fails instead of spinning forever.
  int max_retries = 64;
  // io_handle.h: before_write here, after_read and after_write on the waiter's thread.
  BlockHooks* hooks = nullptr;
  CompletionFilter completion_filter;
};

struct UringStats {
  std::uint64_t fixed_ops = 0;  // submitted as READ_FIXED/WRITE_FIXED (registered buffers)
  std::uint64_t plain_ops = 0;  // submitted as plain READ/WRITE
  std::uint64_t short_completions = 0;
  std::uint64_t retries = 0;  // -EAGAIN / -EINTR / no-progress resubmissions
};

// Moves extents between memory and files with io_uring. A logical offset maps onto the files in
// block_size stripes, round-robin: block b lives in file b % n at (b / n) * block_size. Each extent
// is cut into blocks; up to queue_depth blocks are in flight across all submitted extents, oldest
// extent first. One engine thread drives the ring, so the caller overlaps I/O with compute by
// submitting, working, then waiting. submit() may be called from any thread. A read's blocks are
// verified (hooks->after_read), and a write's recorded (hooks->after_write: the store's checksums), by
// whoever waits for it, as they land, never on the engine thread: the ring is refilled as soon as
// blocks land, and waiters on different extents hash in parallel.
//
// Kernel conventions kept: res < 0 is -errno. Short transfers are resumed from the last 4 KiB
// boundary reached (O_DIRECT needs the resumed offset aligned; re-transferring a partial sector is
// harmless), -EAGAIN and -EINTR resubmit the rest, a read that returns 0 before its end is an error
// (the file is shorter than expected), and any other error fails the extent with path, offset,
// length and errno.
class UringEngine {
 public:
  UringEngine(std::vector<FileDescriptor> files, UringEngineOptions opt);
  ~UringEngine();  // lets in-flight blocks land, fails what was not started; never throws
  UringEngine(const UringEngine&) = delete;
  UringEngine& operator=(const UringEngine&) = delete;

  // Starts moving `bytes` between `buf` and logical `offset`. offset must be a multiple of
  // block_size; bytes and buf must be 4 KiB aligned (O_DIRECT). The buffer must stay alive and
  // untouched until the handle is waited.
  IoHandle submit(IoOp op, std::uint64_t offset, std::byte* buf, std::uint64_t bytes);

  // Registers host memory (each region page-aligned) as io_uring fixed buffers, so blocks inside
  // them skip the per-request page pinning. Waits until no extent is in flight. Returns an empty
  // string on success, otherwise why the kernel refused (RLIMIT_MEMLOCK for unprivileged users,
  // usually); the engine then keeps using plain READ/WRITE. A later call replaces the set. The
  // memory must outlive the engine (or a later call that replaces it).
  std::string register_buffers(std::span<const std::span<std::byte>> regions);
  bool fixed_buffers() const { return !fixed_.empty(); }

  // Where a logical offset lives: file index and offset in that file.
  std::pair<std::size_t, std::uint64_t> locate(std::uint64_t offset) const;
  std::size_t num_files() const { return files_.size(); }
  const FileDescriptor& file(std::size_t i) const { return files_[i]; }
  std::size_t block_size() const { return opt_.block_size; }
  unsigned queue_depth() const { return opt_.queue_depth; }
  UringStats stats() const;

 private:
  struct Slot;
  void run() noexcept;
  bool has_issuable() const;
  void fill();
  void prep(std::uint32_t slot);
  void submit_ring();
  void reap();
  void fail(detail::IoRequest& r, std::string msg);
  void finish_if_done(detail::IoRequest& r);
  void publish_landed(detail::IoRequest& r, std::uint64_t block);
  void fail_everything(const std::string& why);
  int fixed_index(const std::byte* p, std::size_t len) const;

  UringEngineOptions opt_;
  std::vector<FileDescriptor> files_;
  UringRing ring_;

  // Shared with submitters, under mu_.
  std::mutex mu_;
  std::condition_variable cv_;       // wakes the engine thread: new work or stop
  std::condition_variable idle_cv_;  // wakes register_buffers: the engine went idle
  std::deque<std::shared_ptr<detail::IoRequest>> incoming_;
  bool stop_ = false;
  bool busy_ = false;   // the engine thread owns the ring right now
  std::string broken_;  // a ring-level failure: every later submit fails with it

  // Engine thread only (and register_buffers while the engine is idle).
  std::deque<std::shared_ptr<detail::IoRequest>> active_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::vector<std::uint32_t> resume_slots_;  // short or retried blocks waiting for an SQE again
  std::deque<std::uint32_t> unsubmitted_;    // slots written to the SQ ring, not yet submitted (in order)
  std::uint32_t in_kernel_ = 0;              // submitted and not yet reaped
  bool broken_here_ = false;                 // engine thread's copy of !broken_.empty()
  std::uint64_t ordinal_ = 0;
  std::vector<std::span<std::byte>> fixed_;

  std::atomic<std::uint64_t> fixed_ops_{0}, plain_ops_{0}, short_{0}, retries_{0};
  std::thread thread_;
};

}  // namespace tz
