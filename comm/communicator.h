// Communicator: the collectives ZeRO needs (reduce-scatter, all-gather, all-reduce, broadcast,
// barrier) on typed device buffers, non-blocking, with a watchdog deadline. The MPI backend works on
// host memory (the CPU device's); an NCCL backend on GPU memory implements the same interface.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "core/dtype.h"
#include "core/stream.h"

namespace tz {

enum class Collective { reduce_scatter, all_gather, all_reduce, broadcast, barrier };
inline constexpr int kNumCollectives = 5;
std::string collective_name(Collective c);

enum class ReduceOp { sum, max };

// Traffic and time per collective kind, for per-step metrics. "Elements sent" follows the
// bus-bandwidth convention: a reduce-scatter or all-gather of a message of M elements (the full,
// unscattered size) counts (N-1)/N x M per rank, an all-reduce 2(N-1)/N x M, a broadcast M on the
// root only (a tree sends each element at most once per rank; in a world of one, nothing).
// busy_seconds is each collective's time from the call to its completion (as the backend saw it),
// wait_seconds the host time blocked in wait(): 1 - wait/busy is the fraction hidden behind compute.
// A wait() made right after the call can exceed busy by the waiter's wake-up latency (~10-50 us).
struct CommStats {
  double elements_sent[kNumCollectives] = {};
  double bytes_sent[kNumCollectives] = {};
  double wait_seconds[kNumCollectives] = {};
  double busy_seconds[kNumCollectives] = {};
  int calls[kNumCollectives] = {};
};

// The elements one rank sends in a collective by the convention above, for CommStats: `count` as the
// collective takes it (per rank for reduce_scatter and all_gather, the buffer for all_reduce and
// broadcast). Every backend counts with it, so their statistics compare.
double bus_elements_sent(Collective kind, std::size_t count, int rank, int size, int root = 0);

// CommStats updated from several threads (the caller's, a progress thread) and read as snapshots
// between steps.
class CommStatsAccumulator {
 public:
  void add_call(Collective k, double elements_sent, double bytes_sent);
  void add_wait(Collective k, double seconds);
  void add_busy(Collective k, double seconds);
  CommStats snapshot() const;
  void reset();

 private:
  mutable std::mutex mu_;
  CommStats stats_;
};

// A collective in flight (PyTorch c10d's Work). The backend completes it on its own (the MPI
// backend's progress thread, NCCL's stream); nothing the caller does drives it. Destroying an
// unfinished Work waits for it, unless its communicator has failed: then it returns at once and
// silently (the failure is reported once, by whoever waits, or by the watchdog).
class Work {
 public:
  Work() = default;
  virtual ~Work() = default;
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;

  // True once wait() would return or throw without blocking: the collective completed or failed.
  // Never blocks and never drives progress.
  virtual bool done() = 0;
  // Blocks the host until the collective completes. Throws tz::Error if it failed (an MPI error) or
  // its communicator failed (a deadline passed: the same message from every wait on that
  // communicator).
  virtual void wait() = 0;
  // Makes `stream`'s later operations wait for the collective without blocking the host where the
  // backend can (NCCL: an event the stream waits on). The MPI backend works on host buffers and the
  // CPU device's streams run each operation on the calling thread as it is enqueued, so the stream's
  // next operation is run by the host: making the stream wait means blocking the host, i.e. wait().
  virtual void wait(Stream& stream) = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;  // e.g. "MPI_COMM_WORLD (4 ranks)", for error messages

  // Every rank must call the collectives of a communicator in the same order; each is numbered in
  // that order (1, 2, ...), and errors name the number. Buffers are device memory (host memory for
  // the MPI backend) and must stay valid until the Work completes.

  // recv[0 .. count) = op over ranks of send[rank * count .. (rank+1) * count). send has size() * count
  // elements. In place (NCCL's convention): recv == send + rank() * count, and the result lands there.
  // Otherwise recv must not overlap send.
  virtual std::unique_ptr<Work> reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype,
                                               ReduceOp op = ReduceOp::sum) = 0;
  // recv[r * count .. (r+1) * count) = rank r's send[count]. In place (NCCL's convention):
  // send == recv + rank() * count. Otherwise send must not overlap recv.
  virtual std::unique_ptr<Work> all_gather(const void* send, void* recv, std::size_t count, DType dtype) = 0;
  // buf[count] = op over ranks, in place. A scalar (count 1, fp64) is how losses and norms are reduced.
  virtual std::unique_ptr<Work> all_reduce(void* buf, std::size_t count, DType dtype,
                                           ReduceOp op = ReduceOp::sum) = 0;
  virtual std::unique_ptr<Work> broadcast(void* buf, std::size_t count, DType dtype, int root) = 0;
  virtual std::unique_ptr<Work> barrier() = 0;

  // The deadline of each collective is its call time plus the timeout in force at the call.
  std::chrono::milliseconds timeout() const { return timeout_.load(std::memory_order_relaxed); }
  void set_timeout(std::chrono::milliseconds t) { timeout_.store(t, std::memory_order_relaxed); }
  // A snapshot: safe to take while collectives are in flight.
  CommStats stats() const { return stats_.snapshot(); }
  void reset_stats() { stats_.reset(); }

  // Makes every later collective start only after the work enqueued on `s` up to its call (its input's
  // producer), without blocking the host where the backend can (NCCL: an event the communication stream
  // waits on). nullptr: the caller orders inputs itself. A no-op for backends on host memory, whose
  // streams have run each operation by the time it is enqueued.
  virtual void set_producer_stream(Stream* s) { (void)s; }
  // Whether collectives wait on the device for the producer stream (set_producer_stream took one), so a
  // caller need not synchronise the host on its input's producer first.
  virtual bool follows_producer_stream() const { return false; }

  // Collectives called between group_start() and group_end() are launched together where the backend
  // can (NCCL: one ncclGroupStart/ncclGroupEnd, so a bucket of small collectives costs one launch and
  // NCCL may run them concurrently); elsewhere this is a no-op. A Work of a collective in an open group
  // must not be waited on (wait(), wait(Stream&)) before group_end(): NCCL has not launched it yet, and
  // its wait throws. Groups do not nest; every rank opens and ends the same groups around the same
  // collectives. Use CollectiveGroup, which ends the group on every path out of a scope.
  virtual void group_start() {}
  virtual void group_end() {}

  // Pieces: the largest message, in bytes, a reducing collective (reduce_scatter, all_reduce) runs as one
  // call; 0 runs every message whole. A backend whose library allocates temporaries the size of a
  // message (Open MPI's libnbc: a reduce-scatter twice its message, an all-reduce once) runs larger
  // messages as pieces of at most this size, one after another in call order, with at most
  // kReducingPiecesInFlight in flight (a reduce-scatter's pieces are packed into staging of its own,
  // comm_staging_bytes()): what a step's collectives allocate is then bounded, and planned
  // (zero/memory_plan.h). Every rank sets the same value, while none of its collectives is in flight.
  // Results are those of the whole message (each element is still reduced once over the ranks).
  virtual void set_piece_bytes(std::size_t bytes) { (void)bytes; }
  virtual std::size_t piece_bytes() const { return 0; }

  // Ends the whole job now (MPI_Abort): the top-level error handler calls it so no rank waits forever
  // on a peer that has failed.
  virtual void abort(int code) noexcept = 0;

 protected:
  CommStatsAccumulator stats_;

 private:
  std::atomic<std::chrono::milliseconds> timeout_{std::chrono::minutes(5)};
};

// A group of collectives (Communicator::group_start/group_end) for the life of a scope: end() ends it
// (and reports a failure to launch it); a group still open when the scope is left by an exception is
// ended quietly, so the backend's group state stays balanced and the first error is the one reported.
class CollectiveGroup {
 public:
  explicit CollectiveGroup(Communicator& c) : comm_(c) { comm_.group_start(); }
  ~CollectiveGroup();
  CollectiveGroup(const CollectiveGroup&) = delete;
  CollectiveGroup& operator=(const CollectiveGroup&) = delete;
  void end() {
    open_ = false;
    comm_.group_end();
  }

 private:
  Communicator& comm_;
  bool open_ = true;
};

// Reducing pieces a communicator keeps in flight at most (see Communicator::set_piece_bytes).
inline constexpr int kReducingPiecesInFlight = 2;
// The staging a communicator with pieces of `piece_bytes` holds for its reduce-scatters: one piece per
// reducing piece in flight (0 without pieces).
inline std::size_t comm_staging_bytes(std::size_t piece_bytes) { return kReducingPiecesInFlight * piece_bytes; }

// How a collective's send and recv buffers relate, by NCCL's in-place conventions.
enum class BufferUse { separate, in_place };
// reduce_scatter: in place when recv == send + rank * count; throws on any other overlap.
BufferUse reduce_scatter_buffers(const void* send, const void* recv, std::size_t count, DType dtype, int rank,
                                 int size);
// all_gather: in place when send == recv + rank * count; throws on any other overlap.
BufferUse all_gather_buffers(const void* send, const void* recv, std::size_t count, DType dtype, int rank,
                             int size);

// A world of one process without MPI: every collective is a local copy (single-rank runs and tests).
std::unique_ptr<Communicator> make_self_comm();

// The world over MPI (MPI_Init_thread(SERIALIZED) on first use; MPI_Finalize at exit). With one
// process and no launcher it is a world of 1.
std::unique_ptr<Communicator> make_mpi_world();

struct WorldInfo;
// The world this process was started in (discover_world()): the self communicator when no launcher
// started it (world.source == "single": MPI is never initialised), else make_mpi_world().
std::unique_ptr<Communicator> make_host_world(const WorldInfo& world);

}  // namespace tz
