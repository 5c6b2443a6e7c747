// The MPI progress thread: starts one communicator's collectives in call order, advances them with
// MPI_Test, completes their Works, and fails the communicator with one message when a deadline passes.
#include "comm/mpi_progress.h"

#include <pthread.h>

#include "core/thread_affinity.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <utility>

#include "core/error.h"

namespace tz {
namespace {

// Pacing. While a host thread waits, the thread polls without sleeping for the wait's first
// kSpinPolls polls and kSpinTime, then sleeps kWaitPoll between polls. Open MPI 4.1 has no progress
// thread: each round of its non-blocking algorithms advances only at a poll, so a sleep delays the
// collective by up to a sleep (plus up to 50 us of Linux's default timer slack). Spinning through the
// first millisecond keeps messages up to a few MiB at the speed of pure polling (measured on 2 cores,
// fp32 all_reduce at 2 ranks: 1 MiB in ~300 us this way or polling only, ~590 us when sleeping after
// 1000 polls) and bounds the core a waiting rank takes from computing ones (2 cores may carry 4
// ranks) to ~1 ms per wait.
// While nobody waits, collectives still advance in the background: a poll kBackgroundPoll after each
// start or completion, then at doubling intervals up to kBackgroundPollMax while nothing completes.
// Each wake-up costs the core it shares with a computing thread ~20-30 us on our VMs (timer, context
// switches, MPI_Test), so a fixed 100 us poll took 15-20% of that core while a collective waited on
// a late peer; the backoff cuts that to ~5%, while a fresh collective's first rounds still start
// promptly (a 4 MiB all_reduce at 2 ranks completes behind compute in ~2-4 ms either way). With
// nothing in flight the thread sleeps until work arrives and costs nothing.
constexpr int kSpinPolls = 1000;
constexpr std::chrono::microseconds kSpinTime{1000};
constexpr std::chrono::microseconds kWaitPoll{50};
constexpr std::chrono::microseconds kBackgroundPoll{100};
constexpr std::chrono::microseconds kBackgroundPollMax{400};
// The longest the watchdog waits for a host thread to take a failure before it reports it itself.
constexpr std::chrono::milliseconds kMaxGrace{10'000};

double seconds(MpiClock::duration d) { return std::chrono::duration<double>(d).count(); }

// Starts `c` on `comm`; throws tz::Error naming the MPI call if MPI refuses.
void start_call(const MpiCall& c, MPI_Comm comm, MPI_Request* req) {
  switch (c.kind) {
    case Collective::reduce_scatter:
      TZ_MPI_CHECK(MPI_Ireduce_scatter_block(c.send, c.recv, c.count, c.type, c.reduce, comm, req));
      return;
    case Collective::all_gather:
      if (c.send == MPI_IN_PLACE)
        TZ_MPI_CHECK(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, c.recv, c.count, c.type, comm, req));
      else
        TZ_MPI_CHECK(MPI_Iallgather(c.send, c.count, c.type, c.recv, c.count, c.type, comm, req));
      return;
    case Collective::all_reduce:
      TZ_MPI_CHECK(MPI_Iallreduce(c.send, c.recv, c.count, c.type, c.reduce, comm, req));
      return;
    case Collective::broadcast:
      TZ_MPI_CHECK(MPI_Ibcast(c.recv, c.count, c.type, c.root, comm, req));
      return;
    case Collective::barrier:
      TZ_MPI_CHECK(MPI_Ibarrier(comm, req));
      return;
  }
  TZ_FAIL("unknown collective ", int(c.kind));
}

// The caller's handle on an MpiOp. Holds a share of it, so the op outlives whichever of the Work and
// the progress thread lets go first.
class MpiWork final : public Work {
 public:
  MpiWork(MpiProgress& progress, std::shared_ptr<MpiOp> op) : progress_(progress), op_(std::move(op)) {}

  ~MpiWork() override {
    const int state = op_->state.load(std::memory_order_acquire);
    // Complete; or its failure was already thrown to the caller; or the communicator has failed,
    // whose one message is reported by whoever waits, or else by the watchdog.
    if (state == MpiOp::kDone || (state == MpiOp::kFailed && waited_) || progress_.failed()) return;
    try {
      progress_.wait(*op_, Report::quietly);
    } catch (const std::exception& e) {
      if (!progress_.failed())
        log_line(std::string("a collective destroyed before it was waited on failed: ") + e.what());
    }
  }

  bool done() override { return op_->state.load(std::memory_order_acquire) != MpiOp::kPending; }
  void wait() override {
    waited_ = true;
    progress_.wait(*op_, Report::to_caller);
  }
  // Host buffers, and CPU streams run by the host: see Work::wait(Stream&).
  void wait(Stream&) override { wait(); }

 private:
  MpiProgress& progress_;
  std::shared_ptr<MpiOp> op_;
  bool waited_ = false;
};

}  // namespace

std::string MpiOp::describe(const std::string& group) const {
  std::string s = collective_name(call.kind) + " #" + std::to_string(seq);
  if (call.kind != Collective::barrier)
    s += detail::concat(" of ", count, " ", dtype_name(dtype), " elements");
  if (call.kind == Collective::broadcast) s += detail::concat(" from root ", call.root);
  return s + " on " + group;
}

MpiProgress::MpiProgress(MPI_Comm comm, int size, std::string group, CommStatsAccumulator& stats)
    : comm_(comm), size_(size), group_(std::move(group)), stats_(stats) {
  // Room for the collectives a step keeps in flight, so the per-step path does not allocate here.
  queue_.reserve(64);
  batch_.reserve(64);
  waiting_.reserve(64);
  in_flight_.reserve(64);
  thread_ = std::thread([this] {
    pin_io_thread();  // --bind-cores: the I/O core, if the rank has one
    run();
  });
  pthread_setname_np(thread_.native_handle(), "tz-mpi-progress");
}

MpiProgress::~MpiProgress() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::unique_ptr<Work> MpiProgress::submit(const std::shared_ptr<MpiOp>& op) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (failed_.load(std::memory_order_relaxed)) {
      delivered_.store(true);
      throw Error(failure_);
    }
    op->seq = ++seq_;
    queue_.push_back(op);
  }
  wake_.notify_one();
  return std::make_unique<MpiWork>(*this, op);
}

void MpiProgress::wait(MpiOp& op, Report report) {
  int state = op.state.load(std::memory_order_acquire);
  if (state == MpiOp::kPending) {
    const auto t0 = MpiClock::now();
    std::unique_lock<std::mutex> lk(mu_);
    // Tells the thread to poll without sleeping for the first part of this wait (see kSpinTime).
    ++waiters_;
    wait_began_ = t0;
    nudged_ = true;
    wake_.notify_one();
    done_.wait(lk, [&] { return (state = op.state.load(std::memory_order_acquire)) != MpiOp::kPending; });
    --waiters_;
    lk.unlock();
    stats_.add_wait(op.call.kind, seconds(MpiClock::now() - t0));
  }
  if (state == MpiOp::kFailed) {
    if (report == Report::to_caller && failed()) delivered_.store(true);
    throw Error(op.error);
  }
}

void MpiProgress::run() noexcept {
  try {
    loop();
  } catch (const std::exception& e) {
    // Nothing in the loop throws by design (MPI errors fail their own op); if something does
    // (bad_alloc), nothing can advance this communicator any more.
    fail_communicator(detail::concat("the MPI progress thread of ", group_, " stopped: ", e.what(),
                                     "; the job is being aborted"));
    watch_after_failure(kMaxGrace);
  }
}

void MpiProgress::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    if (in_flight_.empty() && waiting_.empty()) wake_.wait(lk, [&] { return stop_ || !queue_.empty(); });
    if (in_flight_.empty() && waiting_.empty() && queue_.empty()) return;  // stopped, nothing left to complete
    batch_.swap(queue_);
    const bool waited = waiters_ > 0;
    const MpiClock::time_point wait_began = wait_began_;
    if (std::exchange(nudged_, false)) polls_since_wait_ = 0;
    lk.unlock();

    const bool moved = advance();
    const auto now = MpiClock::now();
    if (const MpiOp* late = overdue(now)) {
      watch_after_failure(fail_communicator(*late, now));
      return;
    }
    const MpiClock::duration p =
        in_flight_.empty() ? MpiClock::duration::zero() : pause(waited, wait_began, now, moved);
    lk.lock();
    if (p > MpiClock::duration::zero()) wake_.wait_for(lk, p, [&] { return !queue_.empty() || nudged_; });
  }
}

bool MpiProgress::start_next(MpiOp& op) {
  if (op.reducing && reducing_ >= kReducingPiecesInFlight) return false;
  const std::size_t j = op.next_piece++;
  MpiCall c = op.call;
  if (op.piece) {
    const std::size_t es = dtype_size(op.dtype), first = j * op.piece, len = std::min(op.piece, op.count - first);
    c.recv = static_cast<std::byte*>(op.call.recv) + first * es;
    c.count = int(len);
    if (c.kind == Collective::reduce_scatter) {
      // This piece of every rank's block, packed: [rank 0's len elements | rank 1's | ...].
      int s = 0;
      while (slot_busy_[s]) ++s;  // reducing_ < kReducingPiecesInFlight: one is free
      std::vector<std::byte>& st = staging_[s];
      const std::size_t row = len * es;
      if (st.size() < row * std::size_t(size_)) st.resize(row * std::size_t(size_));
      const auto* send = static_cast<const std::byte*>(op.call.send);
      for (int r = 0; r < size_; ++r) std::memcpy(st.data() + r * row, send + (r * op.count + first) * es, row);
      slot_busy_[s] = true;
      op.slot = s;
      c.send = st.data();
    }
  }
  try {
    start_call(c, comm_, &op.request);
    if (op.reducing) ++reducing_;
  } catch (const std::exception& e) {
    op.error = op.describe(group_) + " could not start: " + e.what();
    if (op.slot >= 0) slot_busy_[std::exchange(op.slot, -1)] = false;
  }
  return true;
}

void MpiProgress::start_pieces() {
  for (;;) {
    // The last op started may have pieces left; they come before any later op, one at a time.
    if (!in_flight_.empty() && in_flight_.back()->next_piece < in_flight_.back()->pieces) {
      MpiOp& last = *in_flight_.back();
      if (last.request != MPI_REQUEST_NULL || !last.error.empty() || !start_next(last)) return;
      continue;
    }
    if (waiting_.empty() || !start_next(*waiting_.front())) return;
    in_flight_.push_back(std::move(waiting_.front()));
    waiting_.erase(waiting_.begin());
  }
}

bool MpiProgress::advance() {
  bool moved = !batch_.empty();
  for (auto& op : batch_) waiting_.push_back(std::move(op));
  batch_.clear();
  {
    // Calls MPI; everything else (result moves, wake-ups) happens after, without the lock.
    std::lock_guard<std::timed_mutex> mpi(mpi_call_mutex());
    for (auto& op : in_flight_) {
      if (!op->error.empty() || op->request == MPI_REQUEST_NULL) continue;
      int flag = 0;  // MPI_Test sets the request to MPI_REQUEST_NULL when it completes
      try {
        TZ_MPI_CHECK(MPI_Test(&op->request, &flag, MPI_STATUS_IGNORE));
      } catch (const std::exception& e) {
        op->error = op->describe(group_) + " failed: " + e.what();
      }
      if (flag) {  // a piece (or the whole call) completed: its reducing slot and staging are free
        if (op->reducing) --reducing_;
        if (op->slot >= 0) slot_busy_[std::exchange(op->slot, -1)] = false;
        moved = true;
      }
    }
    const std::size_t started = in_flight_.size();
    start_pieces();
    moved |= in_flight_.size() != started;
  }
  const auto now = MpiClock::now();
  for (auto& op : in_flight_) {
    if (!op->error.empty()) {
      publish(*op, MpiOp::kFailed);
      abandoned_.push_back(op);  // its request is in an unknown state: keep its buffers open
    } else if (op->request == MPI_REQUEST_NULL && op->next_piece == op->pieces) {
      finish(*op, now);
    }
  }
  const std::size_t before = in_flight_.size();
  std::erase_if(in_flight_,
                [](const auto& op) { return op->state.load(std::memory_order_relaxed) != MpiOp::kPending; });
  return moved || in_flight_.size() != before;
}

void MpiProgress::finish(MpiOp& op, MpiClock::time_point now) {
  if (op.move_bytes) std::memcpy(op.move_to, op.move_from, op.move_bytes);
  op.access.reset();
  stats_.add_busy(op.call.kind, seconds(now - op.called));
  publish(op, MpiOp::kDone);
}

void MpiProgress::publish(MpiOp& op, MpiOp::State state) {
  bool waiting;
  {
    // Under the lock the waiters check their predicate under, so none misses the change.
    std::lock_guard<std::mutex> lk(mu_);
    op.state.store(state, std::memory_order_release);
    waiting = waiters_ > 0;
  }
  if (waiting) done_.notify_all();
}

const MpiOp* MpiProgress::overdue(MpiClock::time_point now) const {
  // In call order, so the oldest collective past its deadline is the one named (those started first).
  for (const auto* ops : {&in_flight_, &waiting_})
    for (const auto& op : *ops)
      if (now - op->called >= op->timeout) return op.get();
  return nullptr;
}

MpiClock::duration MpiProgress::pause(bool waited, MpiClock::time_point wait_began, MpiClock::time_point now,
                                      bool moved) {
  if (!waited) {
    background_ = moved ? kBackgroundPoll : std::min<MpiClock::duration>(2 * background_, kBackgroundPollMax);
    return background_;
  }
  if (++polls_since_wait_ < kSpinPolls || now - wait_began < kSpinTime) return MpiClock::duration::zero();
  return kWaitPoll;
}

std::chrono::milliseconds MpiProgress::fail_communicator(const MpiOp& late, MpiClock::time_point now) {
  std::size_t others = 0;
  {
    std::lock_guard<std::mutex> lk(mu_);
    others = in_flight_.size() + waiting_.size() - 1 + queue_.size();
  }
  char waited[32];
  std::snprintf(waited, sizeof waited, "%.2f", seconds(now - late.called));
  std::string message;
  try {
    TZ_FAIL(late.describe(group_), " has not completed ", waited, " s after it was called (timeout ",
            late.timeout.count(), " ms), with ", others,
            others == 1 ? " other collective" : " other collectives",
            " in flight on this communicator. Not every rank has joined it: a rank has died or is stuck in "
            "another call or collective (look for its error; MPI cannot say which rank is missing). The job "
            "is being aborted.");
  } catch (const Error& e) {
    message = e.what();
  }
  fail_communicator(message);
  return std::min(late.timeout, kMaxGrace);
}

void MpiProgress::fail_communicator(const std::string& message) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto* ops : {&waiting_, &batch_, &queue_}) {
      for (auto& op : *ops) in_flight_.push_back(std::move(op));
      ops->clear();
    }
    failure_ = message;
    failed_.store(true, std::memory_order_release);
    for (auto& op : in_flight_) {
      op->error = message;
      op->state.store(MpiOp::kFailed, std::memory_order_release);
    }
  }
  done_.notify_all();
  // MPI may still write into their buffers: they stay open until the job ends.
  abandoned_.insert(abandoned_.end(), in_flight_.begin(), in_flight_.end());
  in_flight_.clear();
}

void MpiProgress::watch_after_failure(std::chrono::milliseconds grace) {
  std::unique_lock<std::mutex> lk(mu_);
  if (!wake_.wait_for(lk, grace, [&] { return stop_ || delivered_.load(); })) {
    // The host threads are stuck outside comm (or swallowed the error): end the job from here.
    const std::string message = failure_;
    lk.unlock();
    log_line(detail::concat(
        "the communicator's watchdog ends the job: no thread of this rank took its error within ",
        grace.count(), " ms: ", message));
    abort_mpi_job(1);
  }
  wake_.wait(lk, [&] { return stop_; });
}

}  // namespace tz
