// NcclCommHandle: an ncclComm owned by whoever is making it, aborted (ncclCommAbort) if it is dropped
// before it is handed on (to the watchdog, which owns it while the communicator lives).
#pragma once

#include <nccl.h>

#include <utility>

namespace tz {

class NcclCommHandle {
 public:
  NcclCommHandle() = default;
  explicit NcclCommHandle(ncclComm_t c) : comm_(c) {}
  ~NcclCommHandle() {
    if (comm_) ncclCommAbort(comm_);
  }
  NcclCommHandle(const NcclCommHandle&) = delete;
  NcclCommHandle& operator=(const NcclCommHandle&) = delete;
  NcclCommHandle(NcclCommHandle&& o) noexcept : comm_(std::exchange(o.comm_, nullptr)) {}
  NcclCommHandle& operator=(NcclCommHandle&& o) noexcept {
    if (this != &o) {
      if (comm_) ncclCommAbort(comm_);
      comm_ = std::exchange(o.comm_, nullptr);
    }
    return *this;
  }

  ncclComm_t get() const { return comm_; }
  // Hands the comm on: this handle no longer aborts it.
  ncclComm_t release() { return std::exchange(comm_, nullptr); }

 private:
  ncclComm_t comm_ = nullptr;
};

}  // namespace tz
