// The NVMe tier of one rank (see nvme_store.h): per-run directory and preallocated files, striping,
// and the per-block XXH3-64 checksums: taken by each write's waiter as its blocks land, checked by each
// read's waiter.
#include "offload/nvme_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <xxhash.h>
#if defined(__x86_64__) && __has_include(<xxh_x86dispatch.h>)
// Debian's libxxhash exports the runtime-dispatched XXH3 (AVX2/AVX-512 when the CPU has them; the
// same hash values): ~9.5 GB/s here against ~7.5 for the SSE2 baseline, which is CPU time per GB moved.
#include <xxh_x86dispatch.h>  // maps XXH3_64bits to XXH3_64bits_dispatch
#endif

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>

#include "core/error.h"
#include "core/memory_budget.h"
#include "core/host_memory.h"
#include "offload/store_lock.h"

namespace tz {
namespace {

std::uint64_t free_bytes(const std::string& path) {
  struct statvfs vfs {};
  if (::statvfs(path.c_str(), &vfs) != 0) return 0;
  return std::uint64_t(vfs.f_bavail) * vfs.f_frsize;
}

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
  return buf;
}

}  // namespace

std::string default_run_id() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return detail::concat(buf, "-", ::getpid());
}

NvmeStore::NvmeStore(NvmeStoreOptions opt) : opt_(std::move(opt)) {
  TZ_CHECK(!opt_.paths.empty(), "the NVMe store needs at least one path (--nvme-path)");
  TZ_CHECK(opt_.bytes > 0, "the NVMe store was asked for 0 bytes");
  TZ_CHECK(!opt_.run_id.empty() && opt_.run_id.find('/') == std::string::npos, "bad NVMe run id '",
           opt_.run_id, "'");
  TZ_CHECK(opt_.block_size >= kDirectIoAlign && opt_.block_size % kDirectIoAlign == 0, "aio.block_size ",
           opt_.block_size, " must be a positive multiple of ", kDirectIoAlign, " (O_DIRECT)");
  const std::uint64_t nfiles = opt_.paths.size();
  const std::uint64_t blocks = (opt_.bytes + opt_.block_size - 1) / opt_.block_size;
  file_bytes_ = (blocks + nfiles - 1) / nfiles * opt_.block_size;
  capacity_ = file_bytes_ * nfiles;

  // Up front, before creating anything: the need against statvfs's free space, summed per
  // filesystem (two paths on one disk share its space).
  struct Fs {
    std::uint64_t need = 0, free = 0;
    std::string paths;
  };
  std::map<dev_t, Fs> per_fs;
  for (const auto& p : opt_.paths) {
    // Stores whose owner died (SIGKILL, a node crash) are removed first, so their space counts as free.
    for (const RemovedStore& r : remove_stale_stores(p))
      log_line("removed NVMe store " + r.folder + " (" + format_bytes(r.bytes) + ") left behind by a run that " +
               "ended without cleaning up (" + r.owner + ")");
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) TZ_FAIL("NVMe path ", p, ": ", std::strerror(errno));
    TZ_CHECK(S_ISDIR(st.st_mode), "NVMe path ", p, " is not a directory");
    Fs& fs = per_fs[st.st_dev];
    fs.need += file_bytes_;
    fs.free = free_bytes(p);
    fs.paths += (fs.paths.empty() ? "" : ", ") + p;
  }
  for (const auto& [dev, fs] : per_fs)
    if (fs.need > fs.free)
      TZ_FAIL("not enough space for rank ", opt_.rank, "'s NVMe store on ", fs.paths, ": need ",
              format_bytes(fs.need), " (", fs.need, " bytes), free ", format_bytes(fs.free), " (", fs.free,
              " bytes, statvfs); free space, add --nvme-path on other disks, or offload less to NVMe");

  try {
    std::vector<FileDescriptor> fds;
    for (const auto& p : opt_.paths) {
      std::string dir = detail::concat(p, "/tierzero-", opt_.run_id, "-r", opt_.rank);
      locks_.push_back(lock_store_folder(dir));  // before the folder: a folder is never unowned
      lock_files_.push_back(dir + ".lock");
      if (::mkdir(dir.c_str(), 0700) != 0) {
        int err = errno;
        if (err == EEXIST)
          TZ_FAIL("NVMe store directory ", dir, " already exists: another run uses run id '", opt_.run_id,
                  "', or a crashed one left it behind (remove it)");
        TZ_FAIL("cannot create NVMe store directory ", dir, ": errno ", err, " (", std::strerror(err), ")");
      }
      dirs_.push_back(dir);
      std::string file = dir + "/store.dat";
      FileDescriptor fd = FileDescriptor::open(file, O_RDWR | O_CREAT | O_EXCL | O_DIRECT, 0600);
      files_.push_back(file);
      TZ_SYS_CHECK(::fchmod(fd.get(), 0600), "fchmod ", file);  // exactly 0600, whatever the umask
      int rc = ::fallocate(fd.get(), 0, 0, off_t(file_bytes_));
      if (rc != 0) {
        int err = errno;
        if (err == ENOSPC || err == EFBIG || err == EDQUOT) {
          std::uint64_t avail = free_bytes(p);
          TZ_FAIL("cannot preallocate rank ", opt_.rank, "'s NVMe store file ", file, ": errno ", err, " (",
                  std::strerror(err), "); need ", format_bytes(file_bytes_), " (", file_bytes_,
                  " bytes), free ", format_bytes(avail), " (", avail, " bytes, statvfs)");
        }
        if (err != EOPNOTSUPP)
          TZ_FAIL("fallocate ", file, " (", file_bytes_, " bytes): errno ", err, " (", std::strerror(err),
                  ")");
        // No preallocation on this filesystem: size the file; a full disk then surfaces as a write
        // error (ENOSPC with the path and offset) at the step that hits it.
        TZ_SYS_CHECK(::ftruncate(fd.get(), off_t(file_bytes_)), "ftruncate ", file);
        log_line("warning: " + p + " does not support fallocate; the NVMe store is not preallocated");
      }
      fds.push_back(std::move(fd));
    }
    if (opt_.checksums == Checksums::on) {
      hash_.assign(capacity_ / opt_.block_size, 0);
      hashed_len_.assign(capacity_ / opt_.block_size, 0);
    }
    UringEngineOptions eo;
    eo.block_size = opt_.block_size;
    eo.queue_depth = opt_.queue_depth;
    eo.hooks = opt_.checksums == Checksums::on ? this : nullptr;
    eo.completion_filter = opt_.completion_filter;
    engine_ = std::make_unique<UringEngine>(std::move(fds), std::move(eo));
  } catch (...) {
    remove_files();  // the destructor does not run for a half-built store
    throw;
  }
}

NvmeStore::~NvmeStore() {
  engine_.reset();  // lets in-flight blocks land and closes the files first
  remove_files();
}

void NvmeStore::remove_files() noexcept {
  for (const auto& f : files_)
    if (::unlink(f.c_str()) != 0 && errno != ENOENT)
      log_line("warning: cannot remove NVMe store file " + f + ": " + std::strerror(errno));
  for (const auto& d : dirs_)
    if (::rmdir(d.c_str()) != 0 && errno != ENOENT)
      log_line("warning: cannot remove NVMe store directory " + d + ": " + std::strerror(errno));
  // The lock files last, while still locked: a store is never seen without its lock.
  for (const auto& l : lock_files_)
    if (::unlink(l.c_str()) != 0 && errno != ENOENT)
      log_line("warning: cannot remove NVMe store lock " + l + ": " + std::strerror(errno));
  files_.clear();
  dirs_.clear();
  lock_files_.clear();
  locks_.clear();
}

NvmeStore::Location NvmeStore::locate(std::uint64_t offset) const {
  auto [file, file_offset] = engine_->locate(offset);
  return {&files_[file], file_offset, offset / opt_.block_size};
}

void NvmeStore::check_extent(const char* op, std::uint64_t offset, std::uint64_t bytes) const {
  TZ_CHECK(offset <= capacity_ && bytes <= capacity_ - offset, "NVMe ", op, " of ", bytes,
           " bytes at offset ", offset, " runs past the store's capacity of ", capacity_, " bytes (rank ",
           opt_.rank, ")");
}

IoHandle NvmeStore::write(std::uint64_t offset, const void* src, std::uint64_t bytes) {
  check_extent("write", offset, bytes);
  // The engine's buffer pointer is non-const because reads fill it; a write only reads it.
  return engine_->submit(IoOp::write, offset, static_cast<std::byte*>(const_cast<void*>(src)), bytes);
}

IoHandle NvmeStore::read(std::uint64_t offset, void* dst, std::uint64_t bytes) {
  check_extent("read", offset, bytes);
  return engine_->submit(IoOp::read, offset, static_cast<std::byte*>(dst), bytes);
}

// Engine thread, as the block is submitted: it is not readable until its write has landed and its waiter
// has recorded it (after_write). If the write fails, a later read of the block fails rather than return
// a torn block.
void NvmeStore::before_write(std::uint64_t block, const std::byte*, std::size_t) { hashed_len_[block] = 0; }

// The write's waiter, as the block lands: the hash of the caller's buffer, which is what the kernel was
// asked to write (the caller keeps it unchanged until the wait returns), taken off the engine's thread.
void NvmeStore::after_write(std::uint64_t block, const std::byte* data, std::size_t len) {
  hash_[block] = XXH3_64bits(data, len);
  hashed_len_[block] = std::uint32_t(len);
}

// The waiter's thread, once the whole extent has landed; several waiters at once only read the table.
void NvmeStore::after_read(std::uint64_t block, const std::byte* data, std::size_t len) const {
  auto where = [&] {
    auto loc = locate(block * opt_.block_size);
    return detail::concat("block ", block, " (logical offset ", block * opt_.block_size, ", ", len,
                          " bytes) in ", *loc.path, " at offset ", loc.file_offset, ", rank ", opt_.rank);
  };
  if (hashed_len_[block] == 0)
    TZ_FAIL("NVMe read of ", where(),
            ": the block was never written, or its last write failed or was not yet waited for");
  if (hashed_len_[block] != len)
    TZ_FAIL("NVMe read of ", where(), ": the block was written with ", hashed_len_[block],
            " bytes; a block is read back with the length it was written with");
  std::uint64_t h = XXH3_64bits(data, len);
  if (h != hash_[block])
    TZ_FAIL("checksum mismatch reading NVMe ", where(), ": XXH3-64 written ", hex(hash_[block]), ", read ",
            hex(h), "; the data on disk is corrupt and is refused");
}

}  // namespace tz
