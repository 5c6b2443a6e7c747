// IoHandle: waits for its request, and never lets it go before the kernel is done with the buffer.
#include "offload/io_handle.h"

#include "core/error.h"

namespace tz {

const char* io_op_name(IoOp op) { return op == IoOp::read ? "read" : "write"; }

IoHandle::~IoHandle() {
  if (!req_) return;
  // The kernel may still be writing into the caller's buffer: never let it go before the I/O ends.
  req_->done.wait(false, std::memory_order_acquire);
  if (req_->failed)
    log_line("an NVMe " + std::string(io_op_name(req_->op)) +
             " failed and nobody waited for it: " + req_->error);
}

IoHandle& IoHandle::operator=(IoHandle&& o) noexcept {
  if (this != &o) {
    IoHandle old(std::move(*this));  // waits for (and logs) the request it held
    req_ = std::move(o.req_);
  }
  return *this;
}

void IoHandle::wait() {
  if (!req_) return;
  req_->done.wait(false, std::memory_order_acquire);
  std::shared_ptr<detail::IoRequest> r = std::move(req_);  // waited once; a second wait() is a no-op
  if (r->failed) throw Error(r->error);
}

bool IoHandle::ready() const { return !req_ || req_->done.load(std::memory_order_acquire); }

}  // namespace tz
