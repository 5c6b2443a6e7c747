// Page-aligned, optionally mlock'ed host memory (see host_memory.h).
#include "core/host_memory.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <utility>

#include "core/error.h"
#include "core/memory_budget.h"

namespace tz {
namespace {

std::string limit_text(rlim_t v) { return v == RLIM_INFINITY ? "unlimited" : format_bytes(std::size_t(v)); }

// VmLck from /proc/self/status: memory this process already holds locked, so the message can say
// how much of the limit is gone. Empty when unavailable (non-Linux procfs).
std::string locked_now() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmLck:", 0) == 0) {
      std::size_t kib = std::strtoull(line.c_str() + 6, nullptr, 10);
      return format_bytes(kib * 1024);
    }
  return {};
}

}  // namespace

std::string describe_mlock_failure(std::size_t need, int err) {
  rlimit lim{};
  ::getrlimit(RLIMIT_MEMLOCK, &lim);
  std::string locked = locked_now();
  return detail::concat("cannot pin (mlock) ", format_bytes(need), " of host memory: errno ", err, " (",
                        std::strerror(err), "); RLIMIT_MEMLOCK is ", limit_text(lim.rlim_cur), " (hard ",
                        limit_text(lim.rlim_max), ")", locked.empty() ? "" : ", already locked " + locked,
                        ", need ", format_bytes(need),
                        " more: raise it (ulimit -l, limits.conf memlock, or Slurm's --propagate=MEMLOCK)");
}

std::string lock_pages(void* p, std::size_t bytes, Pinning pinning, MlockFn mlock_fn) {
  if (pinning == Pinning::none || bytes == 0) return {};
  TZ_CHECK(mlock_fn != nullptr, "no mlock function given");
  if (mlock_fn(p, bytes) == 0) return {};
  std::string why = describe_mlock_failure(bytes, errno);
  if (pinning == Pinning::required) TZ_FAIL(why);
  // best_effort: the caller accepted unpinned memory; O_DIRECT still works (the kernel pins the
  // pages for the duration of each request), only registered io_uring buffers are out of reach.
  return why;
}

AlignedBuffer::AlignedBuffer(std::size_t bytes, Pinning pinning, MlockFn mlock_fn)
    : bytes_(round_up(bytes, kDirectIoAlign)) {
  if (bytes_ == 0) return;
  void* p = nullptr;
  int rc = ::posix_memalign(&p, kDirectIoAlign, bytes_);
  if (rc != 0)
    TZ_FAIL("cannot allocate ", format_bytes(bytes_), " of page-aligned host memory: ", std::strerror(rc));
  ptr_ = static_cast<std::byte*>(p);
  try {
    pin_error_ = lock_pages(ptr_, bytes_, pinning, mlock_fn);
  } catch (...) {
    reset();
    throw;
  }
  pinned_ = pinning != Pinning::none && pin_error_.empty();
}

AlignedBuffer::~AlignedBuffer() { reset(); }

AlignedBuffer::AlignedBuffer(AlignedBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)),
      bytes_(std::exchange(o.bytes_, 0)),
      pinned_(std::exchange(o.pinned_, false)),
      pin_error_(std::move(o.pin_error_)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    pinned_ = std::exchange(o.pinned_, false);
    pin_error_ = std::move(o.pin_error_);
  }
  return *this;
}

void AlignedBuffer::reset() noexcept {
  if (ptr_) {
    if (pinned_) ::munlock(ptr_, bytes_);  // free() would not unlock; the lock outlives the memory otherwise
    std::free(ptr_);
  }
  ptr_ = nullptr;
  bytes_ = 0;
  pinned_ = false;
}

void AlignedBuffer::check_view(std::size_t bytes) const {
  TZ_CHECK(bytes <= bytes_, "view of ", bytes, " bytes exceeds the buffer's ", bytes_);
}

}  // namespace tz
