// UringRing: io_uring_queue_init with the reason it may be refused, and io_uring_queue_exit.
#include "offload/uring_ring.h"

#include <liburing.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace tz {
namespace {

std::string errno_text(int err) { return detail::concat("errno ", err, " (", std::strerror(err), ")"); }

}  // namespace

UringRing::UringRing(unsigned entries) : entries_(entries) {
  auto ring = std::make_unique<io_uring>();
  int rc = io_uring_queue_init(entries, ring.get(), 0);
  if (rc < 0) {
    const char* hint = rc == -ENOSYS ? ": the kernel has no io_uring"
                       : rc == -EPERM
                           ? ": io_uring is disabled (sysctl kernel.io_uring_disabled, or a seccomp "
                             "profile such as a container runtime's default)"
                           : "";
    TZ_FAIL("io_uring_queue_init(", entries, " entries) failed: ", errno_text(-rc), hint);
  }
  ring_.reset(ring.release());
}

UringRing::~UringRing() = default;

void UringRing::Deleter::operator()(io_uring* r) const noexcept {
  io_uring_queue_exit(r);
  delete r;
}

}  // namespace tz
