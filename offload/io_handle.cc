// IoHandle: waits for its request, verifies the blocks that landed, and never lets it go before the
// kernel is done with the buffer.
#include "offload/io_handle.h"

#include <algorithm>

#include "core/error.h"

namespace tz {

const char* io_op_name(IoOp op) { return op == IoOp::read ? "read" : "write"; }

std::string detail::landed_error(const IoRequest& r) {
  if (r.failed) return r.error;
  if (!r.verify) return {};
  for (std::uint64_t i = 0; i < r.nblocks; ++i) {
    const std::uint64_t at = i * r.block_size;
    try {
      r.verify->after_read(r.first_block + i, r.buf + at, std::min<std::uint64_t>(r.block_size, r.bytes - at));
    } catch (const std::exception& e) {
      return e.what();
    }
  }
  return {};
}

IoHandle::~IoHandle() {
  if (!req_) return;
  // The kernel may still be writing into the caller's buffer: never let it go before the I/O ends.
  req_->done.wait(false, std::memory_order_acquire);
  const std::string error = detail::landed_error(*req_);
  if (!error.empty())
    log_line("an NVMe " + std::string(io_op_name(req_->op)) + " failed and nobody waited for it: " + error);
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
  const std::string error = detail::landed_error(*r);
  if (!error.empty()) throw Error(error);
}

bool IoHandle::ready() const { return !req_ || req_->done.load(std::memory_order_acquire); }

}  // namespace tz
