// IoHandle: waits for its request, verifies the blocks that landed, and never lets it go before the
// kernel is done with the buffer.
#include "offload/io_handle.h"

#include <algorithm>

#include "core/error.h"

namespace tz {

const char* io_op_name(IoOp op) { return op == IoOp::read ? "read" : "write"; }

namespace {
std::string verify_block(const detail::IoRequest& r, std::uint64_t i) {
  const std::uint64_t at = i * r.block_size;
  try {
    const std::size_t len = std::min<std::uint64_t>(r.block_size, r.bytes - at);
    if (r.op == IoOp::read)
      r.hooks->after_read(r.first_block + i, r.buf + at, len);
    else
      r.hooks->after_write(r.first_block + i, r.buf + at, len);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}
}  // namespace

std::string detail::await_verified(IoRequest& r) {
  std::string refused;
  for (std::uint64_t checked = 0;;) {
    const std::uint64_t p = r.progress.load(std::memory_order_acquire);
    const std::uint64_t landed = p & ~IoRequest::kClosed;
    // The first refusal ends the checks; the kernel may still be filling later blocks, so keep waiting.
    for (; r.hooks && refused.empty() && checked < landed; ++checked) refused = verify_block(r, checked);
    if (p & IoRequest::kClosed) break;
    r.progress.wait(p, std::memory_order_acquire);  // until more blocks land or the engine lets go
  }
  return r.failed ? r.error : refused;
}

IoHandle::~IoHandle() {
  if (!req_) return;
  // The kernel may still be writing into the caller's buffer: never let it go before the I/O ends.
  const std::string error = detail::await_verified(*req_);
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
  std::shared_ptr<detail::IoRequest> r = std::move(req_);  // waited once; a second wait() is a no-op
  const std::string error = detail::await_verified(*r);
  if (!error.empty()) throw Error(error);
}

bool IoHandle::ready() const {
  return !req_ || (req_->progress.load(std::memory_order_acquire) & detail::IoRequest::kClosed) != 0;
}

}  // namespace tz
