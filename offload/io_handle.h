// One extent submitted to a UringEngine: its operation, the request the engine thread fills in, and the
// caller's handle that waits for it.
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

namespace detail {
// One submitted extent. Fields other than `done` belong to the engine thread until `done` is set
// (release); the waiter reads `failed` and `error` only after seeing it (acquire).
struct IoRequest {
  IoOp op = IoOp::read;
  std::uint64_t offset = 0;  // logical, a multiple of block_size
  std::uint64_t bytes = 0;
  std::byte* buf = nullptr;
  std::uint64_t first_block = 0;
  std::uint64_t nblocks = 0;
  std::uint64_t next = 0;      // next block to issue
  std::uint64_t inflight = 0;  // issued, not yet finished (in the kernel, resuming, or awaiting its hook)
  std::uint64_t finished = 0;
  bool failed = false;
  bool closed = false;  // `done` was set; the engine forgets it
  std::string error;
  std::atomic<bool> done{false};
};
}  // namespace detail

// The caller's side of one submitted extent. wait() blocks until every block has landed (and was
// verified), then throws the request's tz::Error if it failed. Move-only; destroying an unwaited
// handle waits (the kernel may still be writing into the caller's buffer) and logs a failure.
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
  bool ready() const;
  bool valid() const { return req_ != nullptr; }

 private:
  std::shared_ptr<detail::IoRequest> req_;
};

}  // namespace tz
