// The NCCL communicator's watchdog (as c10d's ProcessGroupNCCL watchdog): it owns the ncclComm, so it
// alone decides when to abort it; tracks the collectives in flight, completes their Works, and aborts
// the communicator when a deadline passes or NCCL reports an asynchronous error. Internal to comm/:
// NcclCommunicator is the public face.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.h"

namespace tz {

using NcclClock = std::chrono::steady_clock;

// Timing events reused from one collective to the next, so the per-step path creates none.
class NcclEventPool {
 public:
  NcclEventPool() = default;
  ~NcclEventPool();
  NcclEventPool(const NcclEventPool&) = delete;
  NcclEventPool& operator=(const NcclEventPool&) = delete;
  cudaEvent_t take();
  void give(cudaEvent_t e) noexcept;

 private:
  std::mutex mu_;
  std::vector<cudaEvent_t> free_;
};

// One collective, shared by its Work and the watchdog (either may let go first).
struct NcclOp {
  enum State : int { kPending, kDone, kFailed };

  explicit NcclOp(std::shared_ptr<NcclEventPool> pool);  // takes two events (of the current device)
  ~NcclOp();                                             // gives the events back
  NcclOp(const NcclOp&) = delete;
  NcclOp& operator=(const NcclOp&) = delete;

  // Set by the caller before the op is tracked, read-only afterwards.
  Collective kind = Collective::barrier;
  std::size_t count = 0;  // elements per rank (reduce_scatter, all_gather) or of the buffer
  DType dtype = DType::f32;
  int root = 0;
  std::uint64_t seq = 0;  // 1-based call order on the communicator
  NcclClock::time_point called;
  std::chrono::milliseconds timeout{0};  // the deadline is called + timeout
  std::shared_ptr<NcclEventPool> pool;
  cudaEvent_t start = nullptr;  // recorded on the comm stream before the collective (timing)
  cudaEvent_t end = nullptr;    // ... and after it: complete means the collective is

  std::atomic<int> state{kPending};  // moves once, from kPending, by compare-exchange
  std::atomic<bool> ordered{false};  // a stream was made to wait for it (Work::wait(Stream&))
  // False while the op sits in a collective group not yet ended: NCCL has not launched it and its end
  // event is not recorded, so it can be neither waited on nor watched.
  std::atomic<bool> launched{true};

  NcclClock::time_point deadline() const { return called + timeout; }
  // "all_reduce #4 of 1024 fp32 elements on <group>", as the MPI backend's messages.
  std::string describe(const std::string& group) const;
};

// Whether a failure thrown by wait() counts as handed to the caller (who then reports it), or is
// being swallowed (a Work's destructor), so that the watchdog must still report it.
enum class NcclReport { to_caller, quietly };

class NcclWatchdog {
 public:
  // Takes `comm` (initialised on `gpu`) and starts the thread. `group` names the communicator in
  // messages; `stats` receives busy and wait time; `end_job` ends the whole job (the bootstrap's abort).
  NcclWatchdog(ncclComm_t comm, int gpu, std::string group, CommStatsAccumulator& stats,
               std::function<void(int)> end_job);
  // close(10 s) if close() was not called. Never throws.
  ~NcclWatchdog();
  NcclWatchdog(const NcclWatchdog&) = delete;
  NcclWatchdog& operator=(const NcclWatchdog&) = delete;

  // Stops and joins the thread, then destroys the comm: ncclCommFinalize, waiting up to `limit` for it
  // to quiesce, then ncclCommDestroy; ncclCommAbort instead if it does not. Nothing if it was aborted.
  void close(std::chrono::milliseconds limit) noexcept;

  std::shared_ptr<NcclOp> new_op() { return std::make_shared<NcclOp>(pool_); }
  // Runs `call` on the comm, serialised with every other NCCL call on it, then waits (until `op`'s
  // deadline) for the non-blocking communicator to finish enqueueing it. Throws tz::Error, failing
  // the communicator, if NCCL refuses it, reports an error, or the deadline passes.
  void enqueue(const NcclOp& op, const std::function<ncclResult_t(ncclComm_t)>& call);
  // Starts watching `op` (its end event recorded) and returns its Work.
  std::unique_ptr<Work> track(std::shared_ptr<NcclOp> op);
  // The two halves of track() for a collective in a group: its Work at the call (op.launched false),
  // and watching it once the group is launched and its end event recorded (op.launched true).
  std::unique_ptr<Work> make_work(std::shared_ptr<NcclOp> op);
  void watch(std::shared_ptr<NcclOp> op);

  // Throws the communicator's failure, as handed to the caller, once it has failed.
  void throw_if_failed();
  // Whether `op` completed or failed (never blocks); completes it if its end event has passed. False
  // for an op of a group not yet ended.
  bool poll(NcclOp& op);
  // Blocks until `op` completes, polling its event and NCCL's asynchronous error; fails the
  // communicator at the deadline. Throws the communicator's failure, or tz::Error (the communicator
  // intact) for an op of a group not yet ended.
  void wait(NcclOp& op, NcclReport report);
  // Makes `stream` wait for `op` on the device. Throws the failure if the communicator has failed, and
  // tz::Error for an op of a group not yet ended.
  void wait_on(NcclOp& op, cudaStream_t stream);
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // ncclCommAbort now, unless done already; the communicator counts as failed. Never throws.
  void abort(const std::string& why) noexcept;

 private:
  void require_launched(const NcclOp& op) const;
  void run() noexcept;
  void sweep(NcclClock::time_point now);
  // Whether the op's end event has passed; completes it (busy time) if so; "" or a CUDA error.
  bool query(NcclOp& op, std::string* error);
  void complete(NcclOp& op);
  void check_async_error();
  std::string late_message(const NcclOp& late, NcclClock::time_point now, std::size_t others) const;
  void fail_late(const NcclOp* also, NcclClock::time_point now);
  void fail(const std::string& message, std::chrono::milliseconds grace);
  [[noreturn]] void throw_failure(NcclReport report);
  void abort_comm() noexcept;

  const int gpu_;
  const std::string group_;
  CommStatsAccumulator& stats_;
  const std::function<void(int)> end_job_;
  const std::shared_ptr<NcclEventPool> pool_;

  // Every NCCL call on comm_ holds this (NCCL's calls on one comm are not thread-safe, and abort
  // frees it): comm_ is nullptr once aborted or destroyed.
  std::mutex nccl_mu_;
  ncclComm_t comm_ = nullptr;

  std::mutex mu_;  // guards what follows
  std::condition_variable wake_;
  std::vector<std::shared_ptr<NcclOp>> in_flight_;  // tracked, in call order, until seen complete
  bool stop_ = false;
  std::string failure_;  // the one message, written once before failed_ is set
  NcclClock::time_point failed_at_;
  std::chrono::milliseconds grace_{0};
  std::atomic<bool> failed_{false};
  std::atomic<bool> delivered_{false};  // a host thread has been handed failure_
  bool closed_ = false;

  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace tz
