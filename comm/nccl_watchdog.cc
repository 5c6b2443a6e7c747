// The NCCL watchdog: completes collectives when their end events pass, and fails the communicator
// with one message (aborting the ncclComm) when a deadline passes or NCCL reports an asynchronous error.
#include "comm/nccl_watchdog.h"

#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <utility>

#include "core/cuda/cuda_runtime.h"
#include "core/cuda/cuda_stream.h"
#include "core/error.h"

namespace tz {
namespace {

// The watchdog's period: deadlines are enforced to within this (a waiter enforces its own at once).
constexpr std::chrono::milliseconds kWatchPeriod{100};
// A waiter polls its event without sleeping for its first kSpinPolls polls and kSpinTime (a collective
// that is almost done costs no wake-up latency), then sleeps kWaitPoll between polls, and checks NCCL's
// asynchronous error every kAsyncEvery polls after that.
constexpr int kSpinPolls = 1000;
constexpr std::chrono::microseconds kSpinTime{1000};
constexpr std::chrono::microseconds kWaitPoll{50};
constexpr int kAsyncEvery = 20;
// Enqueueing on a non-blocking communicator (ncclInProgress) is polled at this period.
constexpr std::chrono::microseconds kEnqueuePoll{20};
// The longest the watchdog waits for a host thread to take a failure before it reports it itself.
constexpr std::chrono::milliseconds kMaxGrace{10'000};

double seconds(NcclClock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string nccl_error(ncclResult_t rc) {
  const char* last = ncclGetLastError(nullptr);  // the comm argument is unused by NCCL
  return detail::concat(ncclGetErrorString(rc), " (", int(rc), ")", last && *last ? ": " : "",
                        last ? last : "");
}

// A message with the rank/host prefix the check macros give, without throwing it.
template <typename... Args>
std::string error_text(Args&&... args) {
  try {
    TZ_FAIL(std::forward<Args>(args)...);
  } catch (const Error& e) {
    return e.what();
  }
}

// The caller's handle on an NcclOp. Holds a share of it, so the op outlives whichever of the Work and
// the watchdog lets go first.
class NcclWork final : public Work {
 public:
  NcclWork(NcclWatchdog& watchdog, std::shared_ptr<NcclOp> op) : watchdog_(watchdog), op_(std::move(op)) {}

  ~NcclWork() override {
    // Complete; or failed (the failure is reported by whoever waits, or else by the watchdog); or a
    // stream was ordered after it, so nothing of the caller's can touch its buffers too early.
    // An op of a group not yet ended is the group's to launch and watch: nothing to wait for here.
    if (!op_->launched.load(std::memory_order_acquire)) return;
    if (op_->ordered.load(std::memory_order_relaxed) || watchdog_.poll(*op_) || watchdog_.failed()) return;
    try {
      watchdog_.wait(*op_, NcclReport::quietly);
    } catch (const std::exception& e) {
      if (!watchdog_.failed())
        log_line(std::string("a collective destroyed before it was waited on failed: ") + e.what());
    }
  }

  bool done() override { return watchdog_.poll(*op_); }
  void wait() override { watchdog_.wait(*op_, NcclReport::to_caller); }
  void wait(Stream& stream) override { watchdog_.wait_on(*op_, cuda::stream_of(stream)); }

 private:
  NcclWatchdog& watchdog_;
  std::shared_ptr<NcclOp> op_;
};

}  // namespace

NcclEventPool::~NcclEventPool() {
  for (cudaEvent_t e : free_) cudaEventDestroy(e);
}

cudaEvent_t NcclEventPool::take() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!free_.empty()) {
      cudaEvent_t e = free_.back();
      free_.pop_back();
      return e;
    }
  }
  cudaEvent_t e = nullptr;
  // With timing: busy_seconds is the time between an op's start and end events.
  TZ_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDefault));
  return e;
}

void NcclEventPool::give(cudaEvent_t e) noexcept {
  if (!e) return;
  try {
    std::lock_guard<std::mutex> lk(mu_);
    free_.push_back(e);
  } catch (...) {
    cudaEventDestroy(e);
  }
}

NcclOp::NcclOp(std::shared_ptr<NcclEventPool> p) : pool(std::move(p)) {
  start = pool->take();
  end = pool->take();
}

NcclOp::~NcclOp() {
  pool->give(start);
  pool->give(end);
}

std::string NcclOp::describe(const std::string& group) const {
  std::string s = collective_name(kind) + " #" + std::to_string(seq);
  if (kind != Collective::barrier) s += detail::concat(" of ", count, " ", dtype_name(dtype), " elements");
  if (kind == Collective::broadcast) s += detail::concat(" from root ", root);
  return s + " on " + group;
}

NcclWatchdog::NcclWatchdog(ncclComm_t comm, int gpu, std::string group, CommStatsAccumulator& stats,
                           std::function<void(int)> end_job)
    : gpu_(gpu),
      group_(std::move(group)),
      stats_(stats),
      end_job_(std::move(end_job)),
      pool_(std::make_shared<NcclEventPool>()),
      comm_(comm) {
  in_flight_.reserve(64);  // room for the collectives a step keeps in flight
  thread_ = std::thread([this] { run(); });
  pthread_setname_np(thread_.native_handle(), "tz-nccl-watch");
}

NcclWatchdog::~NcclWatchdog() { close(std::chrono::seconds(10)); }

void NcclWatchdog::close(std::chrono::milliseconds limit) noexcept {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (closed_) return;
    closed_ = stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();

  std::lock_guard<std::mutex> nccl(nccl_mu_);
  if (!comm_) return;  // aborted after a failure
  cudaSetDevice(gpu_);
  // Finalise first: on a non-blocking communicator it returns at once, and the wait for the
  // collectives still on the stream to flush gets a deadline (a dead peer must not hang the exit).
  ncclResult_t rc = ncclCommFinalize(comm_);
  const auto deadline = NcclClock::now() + limit;
  while (rc == ncclInProgress && NcclClock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ncclResult_t state = ncclSuccess;
    rc = ncclCommGetAsyncError(comm_, &state);
    if (rc == ncclSuccess) rc = state;
  }
  if (rc == ncclSuccess) {
    rc = ncclCommDestroy(comm_);
    if (rc != ncclSuccess) log_line("ncclCommDestroy failed for " + group_ + ": " + nccl_error(rc));
  } else {
    log_line(detail::concat("the NCCL communicator ", group_, " did not shut down cleanly within ",
                            limit.count(), " ms (", rc == ncclInProgress ? "still flushing" : nccl_error(rc),
                            "); aborting it"));
    ncclCommAbort(comm_);
  }
  comm_ = nullptr;
}

void NcclWatchdog::enqueue(const NcclOp& op, const std::function<ncclResult_t(ncclComm_t)>& call) {
  ncclResult_t rc = ncclSuccess;
  {
    std::lock_guard<std::mutex> nccl(nccl_mu_);
    if (comm_) rc = call(comm_);
  }
  // (comm_ is gone only once the communicator has failed.)
  if (failed()) throw_failure(NcclReport::to_caller);
  if (rc != ncclSuccess && rc != ncclInProgress) {
    fail(error_text(op.describe(group_), " could not be enqueued: ", nccl_error(rc),
                    ". The NCCL communicator was aborted."),
         std::min(op.timeout, kMaxGrace));
    throw_failure(NcclReport::to_caller);
  }
  // A non-blocking communicator may still be connecting to peers: NCCL's calls on it must wait
  // until it leaves ncclInProgress.
  while (rc == ncclInProgress) {
    ncclResult_t state = ncclSuccess;
    {
      std::lock_guard<std::mutex> nccl(nccl_mu_);
      if (!comm_) break;
      rc = ncclCommGetAsyncError(comm_, &state);
    }
    if (rc == ncclSuccess) rc = state;
    if (rc == ncclSuccess) return;
    if (rc != ncclInProgress) {
      fail(error_text(op.describe(group_), " failed while being enqueued: ", nccl_error(rc),
                      ". The NCCL communicator was aborted."),
           std::min(op.timeout, kMaxGrace));
      break;
    }
    const auto now = NcclClock::now();
    if (now >= op.deadline()) {
      fail_late(&op, now);
      break;
    }
    std::this_thread::sleep_for(kEnqueuePoll);
  }
  if (failed()) throw_failure(NcclReport::to_caller);
}

std::unique_ptr<Work> NcclWatchdog::track(std::shared_ptr<NcclOp> op) {
  watch(op);
  return make_work(std::move(op));
}

std::unique_ptr<Work> NcclWatchdog::make_work(std::shared_ptr<NcclOp> op) {
  return std::make_unique<NcclWork>(*this, std::move(op));
}

void NcclWatchdog::watch(std::shared_ptr<NcclOp> op) {
  std::lock_guard<std::mutex> lk(mu_);
  in_flight_.push_back(std::move(op));
}

void NcclWatchdog::require_launched(const NcclOp& op) const {
  TZ_CHECK(op.launched.load(std::memory_order_acquire), op.describe(group_),
           " was waited on inside its collective group: end the group (CollectiveGroup::end, or "
           "Communicator::group_end) before waiting on any of its collectives");
}

void NcclWatchdog::throw_if_failed() {
  if (failed()) throw_failure(NcclReport::to_caller);
}

void NcclWatchdog::throw_failure(NcclReport report) {
  std::string message;
  {
    std::lock_guard<std::mutex> lk(mu_);
    message = failure_;
  }
  if (report == NcclReport::to_caller) delivered_.store(true, std::memory_order_release);
  throw Error(message);
}

bool NcclWatchdog::query(NcclOp& op, std::string* error) {
  if (op.state.load(std::memory_order_acquire) != NcclOp::kPending) return true;
  const cudaError_t rc = cudaEventQuery(op.end);
  if (rc == cudaErrorNotReady) return false;
  if (rc != cudaSuccess) {
    // A sticky error (a kernel fault): the context, and with it this communicator, is unusable.
    *error = error_text(op.describe(group_), " failed on the GPU: ", cudaGetErrorName(rc), ": ",
                        cudaGetErrorString(rc), ". The NCCL communicator was aborted.");
    return true;
  }
  complete(op);
  return true;
}

void NcclWatchdog::complete(NcclOp& op) {
  int pending = NcclOp::kPending;
  if (!op.state.compare_exchange_strong(pending, NcclOp::kDone, std::memory_order_acq_rel)) return;
  float ms = 0;
  // Both events have passed (start precedes end on the stream); timing cannot fail then, but a
  // missing sample only loses statistics.
  if (cudaEventElapsedTime(&ms, op.start, op.end) == cudaSuccess) stats_.add_busy(op.kind, double(ms) / 1e3);
}

bool NcclWatchdog::poll(NcclOp& op) {
  if (!op.launched.load(std::memory_order_acquire)) return failed();
  if (failed()) return true;
  std::string error;
  const bool over = query(op, &error);
  if (!error.empty()) fail(error, std::min(op.timeout, kMaxGrace));
  return over;
}

void NcclWatchdog::wait(NcclOp& op, NcclReport report) {
  require_launched(op);
  if (op.state.load(std::memory_order_acquire) == NcclOp::kDone) return;
  const auto t0 = NcclClock::now();
  for (int polls = 1;; ++polls) {
    if (failed()) break;
    std::string error;
    if (query(op, &error)) {
      if (!error.empty()) fail(error, std::min(op.timeout, kMaxGrace));
      break;
    }
    const auto now = NcclClock::now();
    if (now >= op.deadline()) {
      fail_late(nullptr, now);
      break;
    }
    if (polls < kSpinPolls || now - t0 < kSpinTime) {
      std::this_thread::yield();
      continue;
    }
    if (polls % kAsyncEvery == 0) check_async_error();
    std::this_thread::sleep_for(kWaitPoll);
  }
  stats_.add_wait(op.kind, seconds(NcclClock::now() - t0));
  // A collective that completed before the communicator failed has its result.
  if (op.state.load(std::memory_order_acquire) != NcclOp::kDone) throw_failure(report);
}

void NcclWatchdog::wait_on(NcclOp& op, cudaStream_t stream) {
  throw_if_failed();
  require_launched(op);
  TZ_CUDA_CHECK(cudaStreamWaitEvent(stream, op.end, 0));
  op.ordered.store(true, std::memory_order_relaxed);
}

void NcclWatchdog::abort(const std::string& why) noexcept {
  try {
    fail(why, kMaxGrace);
  } catch (...) {
  }
  abort_comm();
}

void NcclWatchdog::run() noexcept {
  cudaSetDevice(gpu_);  // NCCL and CUDA calls from this thread act on the communicator's GPU
  try {
    std::unique_lock<std::mutex> lk(mu_);
    while (!stop_) {
      wake_.wait_for(lk, kWatchPeriod, [&] { return stop_; });
      if (stop_) break;
      const auto now = NcclClock::now();
      if (failed_.load(std::memory_order_relaxed)) {
        if (delivered_.load(std::memory_order_acquire) || now - failed_at_ < grace_) continue;
        // The host threads are stuck outside comm (or swallowed the error): end the job from here.
        const std::string message = failure_;
        const auto grace = grace_;
        lk.unlock();
        log_line(
            detail::concat("the NCCL communicator's watchdog ends the job: no thread of this rank took its "
                           "error within ",
                           grace.count(), " ms: ", message));
        end_job_(1);
        return;  // end_job does not return; if it does, the watchdog has nothing left to do
      }
      lk.unlock();
      sweep(now);
      lk.lock();
    }
  } catch (const std::exception& e) {
    // Nothing above throws by design (bad_alloc aside); if it does, nothing watches this
    // communicator any more, so it must not go on.
    abort(error_text("the NCCL watchdog of ", group_, " stopped: ", e.what(),
                     "; the communicator was aborted"));
  }
}

void NcclWatchdog::sweep(NcclClock::time_point now) {
  std::string error;
  const NcclOp* late = nullptr;
  std::chrono::milliseconds grace = kMaxGrace;
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& op : in_flight_) {
      if (query(*op, &error) && !error.empty()) {
        grace = std::min(op->timeout, kMaxGrace);
        break;
      }
    }
    std::erase_if(in_flight_, [](const auto& op) {
      return op->state.load(std::memory_order_acquire) != NcclOp::kPending;
    });
    for (const auto& op : in_flight_)
      if (now >= op->deadline()) {
        late = op.get();
        break;
      }
  }
  if (!error.empty()) {
    fail(error, grace);
    return;
  }
  if (late) {
    fail_late(nullptr, now);
    return;
  }
  check_async_error();
}

void NcclWatchdog::check_async_error() {
  ncclResult_t rc = ncclSuccess, state = ncclSuccess;
  {
    std::lock_guard<std::mutex> nccl(nccl_mu_);
    if (!comm_) return;
    rc = ncclCommGetAsyncError(comm_, &state);
  }
  if (rc == ncclSuccess) rc = state;
  if (rc == ncclSuccess || rc == ncclInProgress) return;
  std::string oldest = "no collective";
  std::chrono::milliseconds grace = kMaxGrace;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!in_flight_.empty()) {
      oldest = in_flight_.front()->describe(group_);
      grace = std::min(in_flight_.front()->timeout, kMaxGrace);
    }
  }
  fail(
      error_text("NCCL reported an asynchronous error on ", group_, " with ", oldest,
                 " in flight: ", nccl_error(rc),
                 ". A peer may have died or lost its network (look for its error). The NCCL communicator was "
                 "aborted."),
      grace);
}

std::string NcclWatchdog::late_message(const NcclOp& late, NcclClock::time_point now,
                                       std::size_t others) const {
  char waited[32];
  std::snprintf(waited, sizeof waited, "%.2f", seconds(now - late.called));
  return error_text(
      late.describe(group_), " has not completed ", waited, " s after it was called (timeout ",
      late.timeout.count(), " ms), with ", others, others == 1 ? " other collective" : " other collectives",
      " in flight on this communicator. Not every rank has joined it: a rank has died or is stuck in "
      "another call or collective (look for its error; NCCL cannot say which rank is missing). The "
      "NCCL communicator was aborted and the job is being ended.");
}

void NcclWatchdog::fail_late(const NcclOp* also, NcclClock::time_point now) {
  std::string message;
  std::chrono::milliseconds grace = kMaxGrace;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (failed_.load(std::memory_order_relaxed)) return;
    // In call order, so the oldest collective past its deadline is the one named; `also` (being
    // enqueued, not yet tracked) is younger than every tracked one.
    const NcclOp* late = also;
    for (const auto& op : in_flight_)
      if (op->state.load(std::memory_order_acquire) == NcclOp::kPending && now >= op->deadline()) {
        late = op.get();
        break;
      }
    if (!late) return;
    std::size_t pending = also ? 1 : 0;
    for (const auto& op : in_flight_)
      pending += op->state.load(std::memory_order_acquire) == NcclOp::kPending;
    message = late_message(*late, now, pending - 1);
    grace = std::min(late->timeout, kMaxGrace);
  }
  fail(message, grace);
}

void NcclWatchdog::fail(const std::string& message, std::chrono::milliseconds grace) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (failed_.load(std::memory_order_relaxed)) return;  // the first failure is the one reported
    failure_ = message;
    failed_at_ = NcclClock::now();
    grace_ = grace;
    for (auto& op : in_flight_) {
      int pending = NcclOp::kPending;
      op->state.compare_exchange_strong(pending, NcclOp::kFailed, std::memory_order_acq_rel);
    }
    failed_.store(true, std::memory_order_release);
  }
  // Stops this rank's kernels that spin waiting for a dead peer, so the streams drain.
  abort_comm();
}

void NcclWatchdog::abort_comm() noexcept {
  std::lock_guard<std::mutex> nccl(nccl_mu_);
  if (!comm_) return;
  cudaSetDevice(gpu_);
  const ncclResult_t rc = ncclCommAbort(comm_);
  comm_ = nullptr;
  if (rc != ncclSuccess) log_line("ncclCommAbort failed for " + group_ + ": " + nccl_error(rc));
}

}  // namespace tz
