// io_uring engine for the NVMe tier: one thread keeps up to queue_depth blocks in flight, resumes
// short and interrupted transfers, and fails an extent with the path, offset, length and errno.
#include "offload/uring_engine.h"

#include <liburing.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <source_location>

#include "core/thread_affinity.h"
#include "core/error.h"
#include "core/memory_budget.h"
#include "core/host_memory.h"

// liburing >= 2.2 is needed (io_uring_sqe_set_data64). The version macros only exist from 2.4 on;
// Debian 12's 2.3 predates them, and an older one fails to compile at the first set_data64 call.
#ifdef IO_URING_VERSION_MAJOR
static_assert(IO_URING_VERSION_MAJOR > 2 || (IO_URING_VERSION_MAJOR == 2 && IO_URING_VERSION_MINOR >= 2),
              "needs liburing >= 2.2 (io_uring_sqe_set_data64)");
#endif

namespace tz {

using detail::IoRequest;

namespace {

// A tz::Error's full text (rank, host, and the engine's function and line) built on the engine
// thread, to be thrown later by whoever waits for the request.
std::string error_text(const std::string& text, std::source_location at = std::source_location::current()) {
  try {
    throw_error("error", "", at.function_name(), at.file_name(), int(at.line()), text);
  } catch (const Error& e) {
    return e.what();
  }
}

std::string errno_text(int err) { return detail::concat("errno ", err, " (", std::strerror(err), ")"); }

// Registered buffers: the kernel refuses a single iovec above 1 GiB, so large arenas are split.
constexpr std::size_t kMaxFixedBuffer = std::size_t(1) << 30;

}  // namespace

// ---------------------------------------------------------------- UringEngine

struct UringEngine::Slot {
  IoRequest* req = nullptr;
  std::uint64_t block = 0;  // logical block index
  std::size_t file = 0;
  std::uint64_t file_offset = 0;  // where the block starts in its file
  std::byte* buf = nullptr;       // where the block starts in memory
  std::uint32_t len = 0;
  std::uint32_t done = 0;  // bytes already transferred (a multiple of kDirectIoAlign)
  int retries = 0;         // consecutive completions without progress
};

UringEngine::UringEngine(std::vector<FileDescriptor> files, UringEngineOptions opt)
    : opt_(std::move(opt)), files_(std::move(files)), ring_((opt_.queue_depth >= 1 ? opt_.queue_depth : 1)) {
  TZ_CHECK(!files_.empty(), "the I/O engine needs at least one file");
  TZ_CHECK(opt_.block_size >= kDirectIoAlign && opt_.block_size % kDirectIoAlign == 0 &&
               opt_.block_size <= (std::size_t(256) << 20),
           "block size ", opt_.block_size, " must be a multiple of ", kDirectIoAlign,
           " between 4 KiB and 256 MiB");
  TZ_CHECK(opt_.queue_depth >= 1 && opt_.queue_depth <= 4096, "queue depth ", opt_.queue_depth,
           " must be between 1 and 4096");
  TZ_CHECK(opt_.max_retries >= 0, "max_retries must not be negative");
  slots_.resize(opt_.queue_depth);
  for (std::uint32_t i = opt_.queue_depth; i-- > 0;) free_slots_.push_back(i);
  resume_slots_.reserve(opt_.queue_depth);
  thread_ = std::thread([this] {
    pin_io_thread();  // --bind-cores: the I/O core, if the rank has one
    run();
  });
}

UringEngine::~UringEngine() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::pair<std::size_t, std::uint64_t> UringEngine::locate(std::uint64_t offset) const {
  std::uint64_t b = offset / opt_.block_size, n = files_.size();
  return {std::size_t(b % n), (b / n) * opt_.block_size + offset % opt_.block_size};
}

UringStats UringEngine::stats() const {
  return {fixed_ops_.load(), plain_ops_.load(), short_.load(), retries_.load()};
}

IoHandle UringEngine::submit(IoOp op, std::uint64_t offset, std::byte* buf, std::uint64_t bytes) {
  TZ_CHECK(offset % opt_.block_size == 0, io_op_name(op), " at offset ", offset,
           " is not a multiple of the block size ", opt_.block_size);
  TZ_CHECK(bytes % kDirectIoAlign == 0, io_op_name(op), " of ", bytes, " bytes is not a multiple of ",
           kDirectIoAlign, " (O_DIRECT); pad the allocation");
  TZ_CHECK(reinterpret_cast<std::uintptr_t>(buf) % kDirectIoAlign == 0, io_op_name(op),
           " buffer is not aligned to ", kDirectIoAlign, " bytes (O_DIRECT); use AlignedBuffer");
  auto r = std::make_shared<IoRequest>();
  r->op = op;
  r->offset = offset;
  r->bytes = bytes;
  r->buf = buf;
  r->first_block = offset / opt_.block_size;
  r->nblocks = (bytes + opt_.block_size - 1) / opt_.block_size;
  r->block_size = opt_.block_size;
  r->hooks = opt_.hooks;  // a read's blocks verified, a write's recorded, by the waiter
  if (bytes == 0) {
    r->progress.store(IoRequest::kClosed);
    return IoHandle(std::move(r));
  }
  {
    std::lock_guard lk(mu_);
    if (!broken_.empty()) TZ_FAIL("the I/O engine is broken: ", broken_);
    TZ_CHECK(!stop_, "the I/O engine is shutting down");
    incoming_.push_back(r);
  }
  cv_.notify_one();
  return IoHandle(std::move(r));
}

std::string UringEngine::register_buffers(std::span<const std::span<std::byte>> regions) {
  std::vector<std::span<std::byte>> pieces;
  for (auto reg : regions)
    for (std::size_t off = 0; off < reg.size(); off += kMaxFixedBuffer)
      pieces.push_back(reg.subspan(off, std::min(kMaxFixedBuffer, reg.size() - off)));
  std::sort(pieces.begin(), pieces.end(), [](auto a, auto b) { return a.data() < b.data(); });
  std::vector<iovec> iov;
  std::size_t total = 0;
  for (auto p : pieces) {
    iov.push_back({p.data(), p.size()});
    total += p.size();
  }
  // The engine thread must not touch the ring while its buffer table changes.
  std::unique_lock lk(mu_);
  idle_cv_.wait(lk, [&] { return !busy_ && incoming_.empty(); });
  if (!fixed_.empty()) {
    io_uring_unregister_buffers(ring_.get());
    fixed_.clear();
  }
  if (iov.empty()) return {};
  int rc = io_uring_register_buffers(ring_.get(), iov.data(), unsigned(iov.size()));
  if (rc < 0) {
    rlimit lim{};
    ::getrlimit(RLIMIT_MEMLOCK, &lim);
    return detail::concat(
        "io_uring_register_buffers of ", format_bytes(total), " in ", iov.size(),
        " buffers failed: ", errno_text(-rc), "; RLIMIT_MEMLOCK is ",
        lim.rlim_cur == RLIM_INFINITY ? std::string("unlimited") : format_bytes(lim.rlim_cur),
        " (registered buffers count against it without CAP_IPC_LOCK)");
  }
  fixed_ = std::move(pieces);
  return {};
}

int UringEngine::fixed_index(const std::byte* p, std::size_t len) const {
  if (fixed_.empty()) return -1;
  auto it = std::upper_bound(fixed_.begin(), fixed_.end(), p,
                             [](const std::byte* q, const std::span<std::byte>& s) { return q < s.data(); });
  if (it == fixed_.begin()) return -1;
  --it;
  if (p + len > it->data() + it->size()) return -1;  // straddles two pieces: plain op
  return int(it - fixed_.begin());
}

// ------------------------------------------------------------ the engine thread

bool UringEngine::has_issuable() const {
  for (const auto& r : active_)
    if (!r->failed && r->next < r->nblocks) return true;
  return false;
}

void UringEngine::fail(IoRequest& r, std::string msg) {
  if (r.closed || r.failed) return;  // the first error is the one reported
  r.failed = true;
  r.error = std::move(msg);
}

void UringEngine::finish_if_done(IoRequest& r) {
  if (r.closed || r.inflight != 0 || !(r.failed || r.finished == r.nblocks)) return;
  r.closed = true;
  r.progress.fetch_or(IoRequest::kClosed, std::memory_order_release);
  r.progress.notify_all();
}

// `block` of `r` has landed whole: raise the landed prefix, so that the waiter verifies it now rather
// than after the whole extent (a write's: records it). Only an extent with hooks has a reader of it, and the
// prefix moves only when its lowest unfinished block lands; the others still unfinished are those in slots
// (in the kernel or waiting to resume) and those not yet issued.
void UringEngine::publish_landed(IoRequest& r, std::uint64_t block) {
  const std::uint64_t prefix = r.progress.load(std::memory_order_relaxed);
  if (!r.hooks || block != r.first_block + prefix) return;
  std::uint64_t lowest = r.next;
  for (const Slot& sl : slots_)
    if (sl.req == &r && sl.block != block) lowest = std::min(lowest, sl.block - r.first_block);
  r.progress.store(lowest, std::memory_order_release);
  r.progress.notify_all();
}

void UringEngine::fail_everything(const std::string& why) {
  {
    std::lock_guard lk(mu_);
    if (broken_.empty()) broken_ = why;
  }
  broken_here_ = true;
  for (auto& r : active_) {
    fail(*r, why);
    finish_if_done(*r);
  }
}

void UringEngine::prep(std::uint32_t s) {
  Slot& sl = slots_[s];
  io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());  // fill() made sure one is free
  std::byte* p = sl.buf + sl.done;
  unsigned n = sl.len - sl.done;
  std::uint64_t off = sl.file_offset + sl.done;
  int fd = files_[sl.file].get();
  int fi = fixed_index(p, n);
  if (sl.req->op == IoOp::read) {
    if (fi >= 0)
      io_uring_prep_read_fixed(sqe, fd, p, n, off, fi);
    else
      io_uring_prep_read(sqe, fd, p, n, off);
  } else {
    if (fi >= 0)
      io_uring_prep_write_fixed(sqe, fd, p, n, off, fi);
    else
      io_uring_prep_write(sqe, fd, p, n, off);
  }
  (fi >= 0 ? fixed_ops_ : plain_ops_).fetch_add(1, std::memory_order_relaxed);
  io_uring_sqe_set_data64(sqe, s);
  unsubmitted_.push_back(s);
}

// Gives every free slot its next block (oldest extent first) and writes SQEs for them and for
// resumed blocks, as far as the SQ ring has room.
void UringEngine::fill() {
  // A write's block is only marked here (before_write); its checksum is its waiter's (after_write), so the
  // ring is refilled without hashing anything.
  while (io_uring_sq_space_left(ring_.get()) > 0) {
    if (!resume_slots_.empty()) {
      std::uint32_t s = resume_slots_.back();
      resume_slots_.pop_back();
      IoRequest& r = *slots_[s].req;
      if (r.failed || broken_here_) {  // the extent already failed: do not finish its other blocks
        slots_[s].req = nullptr;
        free_slots_.push_back(s);
        --r.inflight;
        finish_if_done(r);
        continue;
      }
      prep(s);
      continue;
    }
    if (free_slots_.empty() || broken_here_) return;
    IoRequest* r = nullptr;
    for (auto& a : active_)
      if (!a->failed && a->next < a->nblocks) {
        r = a.get();
        break;
      }
    if (!r) return;
    std::uint32_t s = free_slots_.back();
    free_slots_.pop_back();
    Slot& sl = slots_[s];
    std::uint64_t i = r->next++;
    sl.req = r;
    sl.block = r->first_block + i;
    auto [file, file_offset] = locate(sl.block * opt_.block_size);
    sl.file = file;
    sl.file_offset = file_offset;
    sl.buf = r->buf + i * opt_.block_size;
    sl.len = std::uint32_t(std::min<std::uint64_t>(opt_.block_size, r->bytes - i * opt_.block_size));
    sl.done = 0;
    sl.retries = 0;
    ++r->inflight;
    if (r->op == IoOp::write && opt_.hooks) {
      try {
        opt_.hooks->before_write(sl.block, sl.buf, sl.len);
      } catch (const std::exception& e) {
        fail(*r, e.what());
        sl.req = nullptr;
        free_slots_.push_back(s);
        --r->inflight;
        finish_if_done(*r);
        continue;
      }
    }
    prep(s);
  }
}

void UringEngine::submit_ring() {
  int transient = 0;
  while (!unsubmitted_.empty()) {
    int rc = io_uring_submit(ring_.get());
    if (rc > 0) {
      unsubmitted_.erase(unsubmitted_.begin(),
                         unsubmitted_.begin() + std::min<std::size_t>(rc, unsubmitted_.size()));
      in_kernel_ += std::uint32_t(rc);
      transient = 0;
      continue;
    }
    if (rc == -EINTR) continue;
    if ((rc == 0 || rc == -EAGAIN || rc == -EBUSY || rc == -ENOMEM) && in_kernel_ > 0) return;  // reap first
    if ((rc == 0 || rc == -EAGAIN || rc == -EBUSY || rc == -ENOMEM) && ++transient < 1000) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    // The SQEs left in the ring are never submitted: release their slots and fail everything.
    std::string why =
        error_text(detail::concat("io_uring_submit failed: ", rc < 0 ? errno_text(-rc) : "no progress"));
    for (std::uint32_t s : unsubmitted_) {
      --slots_[s].req->inflight;
      slots_[s].req = nullptr;
      free_slots_.push_back(s);
    }
    unsubmitted_.clear();
    fail_everything(why);
    return;
  }
}

// Waits for at least one completion and handles every one available. A block that landed whole is
// finished here: its checksum, if any, is the waiter's to check (io_handle.h).
void UringEngine::reap() {
  io_uring_cqe* cqe = nullptr;
  int rc;
  do rc = io_uring_wait_cqe(ring_.get(), &cqe);
  while (rc == -EINTR || rc == -EAGAIN);
  if (rc < 0) {
    // Without completions nothing in flight can be accounted for: the ring is unusable. Every
    // extent fails rather than hang (run() releases the slots); later submits are refused.
    fail_everything(error_text(detail::concat("io_uring_wait_cqe failed: ", errno_text(-rc))));
    in_kernel_ = 0;
    return;
  }
  unsigned head, seen = 0;
  io_uring_for_each_cqe(ring_.get(), head, cqe) {
    ++seen;
    std::uint32_t s = std::uint32_t(io_uring_cqe_get_data64(cqe));
    --in_kernel_;
    Slot& sl = slots_[s];
    IoRequest& r = *sl.req;
    const std::string& path = files_[sl.file].path();
    std::uint64_t off = sl.file_offset + sl.done;
    std::uint32_t want = sl.len - sl.done;
    int res = cqe->res;
    if (opt_.completion_filter) res = opt_.completion_filter({ordinal_, r.op, &path, off, want}, res);
    ++ordinal_;
    auto release = [&] {
      sl.req = nullptr;
      free_slots_.push_back(s);
      --r.inflight;
      finish_if_done(r);
    };
    auto where = [&] {
      return detail::concat(path, " at offset ", off, ", ", want, " bytes (block ", sl.block,
                            ", logical offset ", sl.block * opt_.block_size + sl.done, ")");
    };
    auto resume = [&](bool progressed, int why) {
      retries_.fetch_add(1, std::memory_order_relaxed);
      sl.retries = progressed ? 0 : sl.retries + 1;
      if (sl.retries > opt_.max_retries) {
        fail(r, error_text(detail::concat(
                    "NVMe ", io_op_name(r.op), " of ", where(), " made no progress after ", opt_.max_retries,
                    " retries; last result ", why < 0 ? errno_text(-why) : detail::concat(why, " bytes"))));
        release();
      } else {
        resume_slots_.push_back(s);
      }
    };
    if (r.failed) {
      release();  // the extent already failed: let its other blocks land, then report
    } else if (res == -EAGAIN || res == -EINTR) {
      resume(false, res);
    } else if (res < 0) {
      fail(r, error_text(
                  detail::concat("NVMe ", io_op_name(r.op), " failed: ", where(), ": ", errno_text(-res))));
      release();
    } else if (res == 0) {
      fail(r, error_text(detail::concat("NVMe ", io_op_name(r.op), " of ", where(), " returned 0 bytes",
                                        r.op == IoOp::read
                                            ? " (end of file: the file is shorter than the store expects)"
                                            : " (no progress)")));
      release();
    } else if (std::uint32_t(res) > want) {
      fail(r, error_text(detail::concat("NVMe ", io_op_name(r.op), " of ", where(), " reported ", res,
                                        " bytes, more than asked")));
      release();
    } else if (std::uint32_t(res) == want) {
      ++r.finished;
      publish_landed(r, sl.block);
      release();
    } else {
      // Short: O_DIRECT can only resume at an aligned offset, so a partial sector is transferred again.
      short_.fetch_add(1, std::memory_order_relaxed);
      std::uint32_t progress = std::uint32_t(res) / kDirectIoAlign * kDirectIoAlign;
      sl.done += progress;
      resume(progress > 0, res);
    }
  }
  io_uring_cq_advance(ring_.get(), seen);
}

void UringEngine::run() noexcept {
  for (;;) {
    try {
      {
        std::unique_lock lk(mu_);
        while (!incoming_.empty()) {
          active_.push_back(std::move(incoming_.front()));
          incoming_.pop_front();
        }
        if (stop_) {
          // Shutting down: blocks in the kernel still land (they own the caller's memory); extents
          // with blocks never started fail.
          for (auto& r : active_)
            if (r->next < r->nblocks)
              fail(*r, error_text(detail::concat("the NVMe I/O engine was shut down before this ",
                                                 io_op_name(r->op), " at offset ", r->offset, " finished")));
        }
        std::erase_if(active_, [](const auto& r) { return r->closed; });
        bool idle = free_slots_.size() == slots_.size() && !has_issuable();
        if (idle) {
          for (auto& r : active_) finish_if_done(*r);  // failed extents with nothing in flight
          std::erase_if(active_, [](const auto& r) { return r->closed; });
          if (stop_) return;
          busy_ = false;
          idle_cv_.notify_all();
          cv_.wait(lk, [&] { return stop_ || !incoming_.empty(); });
          busy_ = true;
          continue;
        }
      }
      fill();
      submit_ring();
      if (in_kernel_ > 0)
        reap();
      else if (!resume_slots_.empty() || !unsubmitted_.empty())
        continue;
      if (broken_here_ && in_kernel_ == 0) {
        // Nothing can move any more: release every slot so every waiter wakes up with the error.
        for (std::uint32_t s = 0; s < slots_.size(); ++s)
          if (slots_[s].req) {
            --slots_[s].req->inflight;
            slots_[s].req = nullptr;
            free_slots_.push_back(s);
          }
        resume_slots_.clear();
        unsubmitted_.clear();
        for (auto& r : active_) finish_if_done(*r);
      }
    } catch (const std::exception& e) {
      fail_everything(e.what());
    }
  }
}

}  // namespace tz
