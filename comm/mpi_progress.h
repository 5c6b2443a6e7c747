// The MPI backend's progress thread (as c10d's ProcessGroupMPI worker): it starts one communicator's
// collectives in call order, advances them with MPI_Test, completes their Works, and is the watchdog
// of their deadlines. Internal to comm/: MpiCommunicator is the public face.
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.h"
#include "core/poison.h"

namespace tz {

using MpiClock = std::chrono::steady_clock;

// The process-wide lock around MPI calls. MPI_THREAD_SERIALIZED allows one thread in MPI at a time,
// and every communicator's progress thread calls MPI; its owner's thread takes it too (MPI_Comm_dup,
// MPI_Comm_free). Timed, so that abort can give up on it.
std::timed_mutex& mpi_call_mutex();

// Flushes stdout and stderr and ends the whole job with MPI_Abort(MPI_COMM_WORLD, code).
[[noreturn]] void abort_mpi_job(int code) noexcept;

// The non-blocking MPI call that starts a collective, with its arguments (send may be MPI_IN_PLACE).
struct MpiCall {
  Collective kind = Collective::barrier;
  const void* send = nullptr;
  void* recv = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op reduce = MPI_OP_NULL;
  int root = 0;
};

// One collective, shared by its Work and the progress thread: the thread may still hold it after the
// caller has dropped the Work, and the Work may outlive the thread's interest in it.
struct MpiOp {
  enum State : int { kPending, kDone, kFailed };

  // Set by the caller before the op is submitted, read-only afterwards.
  MpiCall call;
  std::size_t count = 0;  // elements per rank, for messages
  DType dtype = DType::f32;
  MpiClock::time_point called;
  std::chrono::milliseconds timeout{0};  // the deadline is called + timeout
  // Copied after completion, before the op is reported done (the in-place reduce-scatter's result
  // moves from the buffer's start, where MPI_IN_PLACE leaves it, to this rank's slice).
  const void* move_from = nullptr;
  void* move_to = nullptr;
  std::size_t move_bytes = 0;
  // Pieces (Communicator::set_piece_bytes): a reduce_scatter or all_reduce larger than the piece size
  // runs as `pieces` calls of at most `piece` elements (per rank for a reduce_scatter, whose call then
  // has the original send and this rank's recv, never MPI_IN_PLACE), one after another. piece 0: one
  // call, `call` as it is.
  std::size_t piece = 0;
  std::size_t pieces = 1;
  bool reducing = false;  // counted against kReducingPiecesInFlight

  // The progress thread's after submission.
  std::size_t next_piece = 0;  // the next piece to start; == pieces once all have started
  int slot = -1;               // the staging slot of the reduce_scatter piece in flight

  std::uint64_t seq = 0;  // 1-based call order on the communicator (set at submission)
  DeviceAccess access;    // the buffers stay open while MPI may touch them
  MPI_Request request = MPI_REQUEST_NULL;
  std::string error;  // written before state becomes kFailed

  std::atomic<int> state{kPending};  // published with release, read with acquire

  // "all_reduce #4 of 1024 fp32 elements on <group>".
  std::string describe(const std::string& group) const;
};

// Whether a failure that wait() throws counts as handed to the caller (which then reports it), or is
// being swallowed (a Work's destructor), so that the watchdog must still report it.
enum class Report { to_caller, quietly };

class MpiProgress {
 public:
  // Starts the thread. `group` names the communicator (of `size` ranks) in messages; `stats` receives
  // busy and wait time.
  MpiProgress(MPI_Comm comm, int size, std::string group, CommStatsAccumulator& stats);
  // Stops and joins the thread. Collectives still in flight (a Work outlived by its communicator) are
  // advanced until they complete or their deadline fails the communicator.
  ~MpiProgress();
  MpiProgress(const MpiProgress&) = delete;
  MpiProgress& operator=(const MpiProgress&) = delete;

  // Numbers `op`, queues it to be started, and returns its Work. Throws the communicator's failure
  // instead once it has failed.
  std::unique_ptr<Work> submit(const std::shared_ptr<MpiOp>& op);
  // Blocks until `op` completes or fails, counting the time as waiting; throws its error.
  void wait(MpiOp& op, Report report);
  // Whether a deadline has passed: every collective of the communicator has failed with one message.
  bool failed() const { return failed_.load(std::memory_order_acquire); }

 private:
  void run() noexcept;
  void loop();
  bool advance();  // whether anything started or completed
  bool start_next(MpiOp& op);  // starts op's next piece if a reducing slot allows; whether it did
  void start_pieces();         // in call order, as far as the reducing slots allow
  void finish(MpiOp& op, MpiClock::time_point now);
  void publish(MpiOp& op, MpiOp::State state);
  const MpiOp* overdue(MpiClock::time_point now) const;
  std::chrono::milliseconds fail_communicator(const MpiOp& late, MpiClock::time_point now);
  void fail_communicator(const std::string& message);
  void watch_after_failure(std::chrono::milliseconds grace);
  MpiClock::duration pause(bool waited, MpiClock::time_point wait_began, MpiClock::time_point now,
                           bool moved);

  const MPI_Comm comm_;
  const int size_;
  const std::string group_;
  CommStatsAccumulator& stats_;

  std::mutex mu_;                              // guards what follows, up to the thread's own fields
  std::condition_variable wake_;               // the thread's: work queued, a wait begun, stop
  std::condition_variable done_;               // the waiters': an op completed or failed
  std::vector<std::shared_ptr<MpiOp>> queue_;  // submitted, not yet started, in call order
  std::uint64_t seq_ = 0;
  int waiters_ = 0;                  // host threads blocked in wait()
  MpiClock::time_point wait_began_;  // when the latest of them began
  bool nudged_ = false;              // a wait began since the thread last looked
  bool stop_ = false;
  std::string failure_;  // the one message, written once before failed_ is set
  std::atomic<bool> failed_{false};
  std::atomic<bool> delivered_{false};  // some host thread has been handed failure_

  // The thread's own.
  std::vector<std::shared_ptr<MpiOp>> in_flight_;  // started, in call order
  std::vector<std::shared_ptr<MpiOp>> batch_;      // taken from queue_
  std::vector<std::shared_ptr<MpiOp>> waiting_;    // in call order, not yet started: no reducing slot
  int reducing_ = 0;                               // reducing pieces in flight
  std::vector<std::byte> staging_[kReducingPiecesInFlight];  // a reduce_scatter piece's packed input
  bool slot_busy_[kReducingPiecesInFlight] = {};
  std::vector<std::shared_ptr<MpiOp>> abandoned_;  // failed: MPI may still write their buffers
  int polls_since_wait_ = 0;
  MpiClock::duration background_{};  // the current background poll interval

  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace tz
