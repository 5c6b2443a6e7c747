// Communicator: the collectives ZeRO needs (reduce-scatter, all-gather, all-reduce, broadcast,
// barrier) on typed buffers, non-blocking, each with a deadline. The MPI backend works on host
// buffers; an NCCL backend on device buffers implements the same interface.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/dtype.h"

namespace tz {

enum class Collective { reduce_scatter, all_gather, all_reduce, broadcast, barrier };
inline constexpr int kNumCollectives = 5;
std::string collective_name(Collective c);

enum class ReduceOp { sum, max };

// Traffic and waiting per collective kind, for per-step metrics. "Elements sent" follows the
// bus-bandwidth convention: a reduce-scatter or all-gather of a message of M elements (the full,
// unscattered size) counts (N-1)/N x M per rank, an all-reduce 2(N-1)/N x M, a broadcast M on the
// root only (a tree sends each element at most once per rank; in a world of one, nothing).
struct CommStats {
  double elements_sent[kNumCollectives] = {};
  double bytes_sent[kNumCollectives] = {};
  double wait_seconds[kNumCollectives] = {};
  int calls[kNumCollectives] = {};
  void reset() { *this = CommStats{}; }
};

// A collective in flight. wait() blocks until it completes or the communicator's timeout passes,
// then throws tz::Error naming the collective, the group and how long it waited. Destroying an
// unfinished Work waits for it (and logs, never throws, on failure).
class Work {
 public:
  virtual ~Work() = default;
  // True once complete; also advances MPI progress (Open MPI 4.1 progresses non-blocking
  // collectives only inside MPI calls, so the engine calls test() between blocks).
  virtual bool test() = 0;
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;  // e.g. "MPI_COMM_WORLD (4 ranks)", for error messages

  // recv[count] = op over ranks of send[rank * count .. (rank+1) * count). send has size() * count
  // elements. send == recv is allowed: then the input is the whole buffer and the result lands in its
  // first `count` elements (MPI_IN_PLACE semantics).
  virtual std::unique_ptr<Work> reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype,
                                               ReduceOp op = ReduceOp::sum) = 0;
  // recv[r * count .. (r+1) * count) = rank r's send[count]. send may point at recv + rank() * count
  // (in place).
  virtual std::unique_ptr<Work> all_gather(const void* send, void* recv, std::size_t count, DType dtype) = 0;
  // buf[count] = op over ranks, in place.
  virtual std::unique_ptr<Work> all_reduce(void* buf, std::size_t count, DType dtype, ReduceOp op = ReduceOp::sum) = 0;
  virtual std::unique_ptr<Work> broadcast(void* buf, std::size_t count, DType dtype, int root) = 0;
  virtual std::unique_ptr<Work> barrier() = 0;

  std::chrono::milliseconds timeout() const { return timeout_; }
  void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }
  CommStats& stats() { return stats_; }

  // Ends the whole job now (MPI_Abort): the top-level error handler calls it so no rank waits forever
  // on a peer that has failed.
  virtual void abort(int code) noexcept = 0;

 protected:
  std::chrono::milliseconds timeout_{std::chrono::minutes(5)};
  CommStats stats_;
};

// A world of one process without MPI: every collective is a local copy (single-rank runs and tests).
std::unique_ptr<Communicator> make_self_comm();

// The world over MPI (MPI_Init_thread(FUNNELED) on first use; MPI_Finalize at exit). With one
// process and no launcher it is a world of 1.
std::unique_ptr<Communicator> make_mpi_world();

}  // namespace tz
