// NvmeStore: the NVMe tier of one rank. One preallocated O_DIRECT file per --nvme-path entry under a
// per-run directory, block-striped across them, moved by io_uring, each block checksummed (XXH3-64).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "offload/uring_engine.h"

namespace tz {

enum class Checksums { off, on };

struct NvmeStoreOptions {
  std::vector<std::string> paths;  // one file per path; blocks are striped round-robin over them
  int rank = 0;
  std::uint64_t bytes = 0;                        // what this rank needs; rounded up to whole stripes
  std::size_t block_size = std::size_t(1) << 20;  // aio.block_size (DeepSpeed's default, 1 MiB)
  unsigned queue_depth = 8;                       // aio.queue_depth (DeepSpeed's default, 8)
  Checksums checksums = Checksums::on;
  std::string run_id;  // names <path>/tierzero-<run_id>-r<rank>/; the same on every rank of a job
  CompletionFilter completion_filter;  // test seam: rewrites completion results (uring_engine.h)
};

// A run id for NvmeStoreOptions::run_id: UTC time and the process id, e.g. "20261130-142501-4242".
// A job passes one rank's id to all ranks so the directories line up.
std::string default_run_id();

// Creates <path>/tierzero-<run_id>-r<rank>/ (mode 0700) on every path, with one file `store.dat`
// (mode 0600) in each, preallocated with fallocate so a full disk shows up here, before training,
// and not at some step. The free space is checked first (summed over paths on one filesystem); a
// shortfall, or ENOSPC/EFBIG from fallocate, is a tz::Error naming the path, the need and the free
// space. The destructor removes the files and directories (never throws; failures are logged).
// Each directory has a lock file beside it, held for the store's life: stores on the same paths left
// by runs that died are removed first, with a message; live jobs' stores are never touched
// (offload/store_lock.h).
//
// Addressing: a logical offset in [0, capacity()). Block b (= offset / block_size) lives in file
// b % paths at (b / paths) * block_size. O_DIRECT rules apply to every call: the offset is a
// multiple of block_size, the length and the buffer address are multiples of 4 KiB (pad the
// caller's allocation: AlignedBuffer does), so an extent of n bytes occupies
// round_up(n, block_size) of the store. A block is read back with the length it was written with.
//
// Checksums on: the XXH3-64 of every block is recorded (in memory) as it is submitted for writing
// (on the I/O engine's thread) and checked when it is read back, by the thread that waits for the
// read (IoHandle::wait, before it returns); a mismatch, or a read of a block never written, fails
// that wait() with the path, offset and block, so corrupt bytes are never handed on as data.
class NvmeStore : private BlockHooks {
 public:
  explicit NvmeStore(NvmeStoreOptions opt);
  ~NvmeStore() override;
  NvmeStore(const NvmeStore&) = delete;
  NvmeStore& operator=(const NvmeStore&) = delete;

  // Asynchronous: returns at once; wait() on the handle throws tz::Error if any block failed (I/O
  // error, checksum mismatch). The buffer must stay untouched until then. Many extents may be in
  // flight at once; they share the queue depth, oldest first. Do not write a block while another
  // request reads or writes it: a read lasts until its wait() returns (it verifies there).
  IoHandle write(std::uint64_t offset, const void* src, std::uint64_t bytes);
  IoHandle read(std::uint64_t offset, void* dst, std::uint64_t bytes);
  // Blocking forms: submit and wait.
  void write_sync(std::uint64_t offset, const void* src, std::uint64_t bytes) {
    write(offset, src, bytes).wait();
  }
  void read_sync(std::uint64_t offset, void* dst, std::uint64_t bytes) { read(offset, dst, bytes).wait(); }

  // Registers pinned host arenas as io_uring fixed buffers (see UringEngine::register_buffers);
  // returns "" or why the kernel refused, in which case plain reads and writes are used.
  std::string register_buffers(std::span<const std::span<std::byte>> regions) {
    return engine_->register_buffers(regions);
  }

  struct Location {
    const std::string* path;
    std::uint64_t file_offset;
    std::uint64_t block;
  };
  Location locate(std::uint64_t offset) const;

  std::uint64_t capacity() const { return capacity_; }
  std::size_t block_size() const { return opt_.block_size; }
  // Store bytes an extent of `bytes` occupies: extents start on block boundaries.
  std::uint64_t extent_bytes(std::uint64_t bytes) const { return round_up_u64(bytes, opt_.block_size); }
  std::uint64_t file_bytes() const { return file_bytes_; }
  const std::vector<std::string>& files() const { return files_; }
  const std::vector<std::string>& directories() const { return dirs_; }
  bool fixed_buffers() const { return engine_->fixed_buffers(); }
  bool checksums() const { return opt_.checksums == Checksums::on; }
  UringStats stats() const { return engine_->stats(); }

 private:
  static std::uint64_t round_up_u64(std::uint64_t n, std::uint64_t a) { return (n + a - 1) / a * a; }
  void check_extent(const char* op, std::uint64_t offset, std::uint64_t bytes) const;
  void before_write(std::uint64_t block, const std::byte* data, std::size_t len) override;
  void after_write(std::uint64_t block, const std::byte* data, std::size_t len) override;
  void after_read(std::uint64_t block, const std::byte* data, std::size_t len) const override;
  void remove_files() noexcept;

  NvmeStoreOptions opt_;
  std::uint64_t file_bytes_ = 0;
  std::uint64_t capacity_ = 0;
  std::vector<std::string> dirs_;   // created by this store, removed by it
  std::vector<std::string> files_;  // likewise
  std::vector<std::string> lock_files_;  // <dir>.lock beside each folder (offload/store_lock.h)
  std::vector<FileDescriptor> locks_;    // held (flock) while the store lives
  // Per logical block: the length marked 0 on the engine thread (before_write), then XXH3-64 and the length
  // hashed written by the write's waiter (after_write), read by a read's waiters (after_read; each extent's
  // completion and the caller's wait order them): 0, never written or not yet recorded. Sized once at
  // construction: nothing allocates per step.
  std::vector<std::uint64_t> hash_;
  std::vector<std::uint32_t> hashed_len_;
  std::unique_ptr<UringEngine> engine_;
};

}  // namespace tz
