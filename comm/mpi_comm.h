// The MPI backend of Communicator: non-blocking collectives on host buffers over a duplicate of
// MPI_COMM_WORLD, advanced by a progress thread that is also their watchdog (comm/mpi_progress.h),
// plus the MPI handles benchmarks need to compare.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include "comm/communicator.h"

namespace tz {

// Initialises MPI (MPI_Init_thread with MPI_THREAD_SERIALIZED: each communicator's progress thread
// calls MPI, one thread at a time) the first time it is called in this process, unless something else
// already did (then it checks that level is provided), and registers MPI_Finalize to run at exit.
// make_mpi_world() calls it; call it directly only to use MPI before making a communicator.
void ensure_mpi_initialized();

// The MPI datatype a DType travels as. bf16 and fp16 travel as 2-byte MPI_UINT16_T: MPI has no
// 16-bit float types, and the reductions below know how to add them.
MPI_Datatype mpi_datatype(DType dtype);

// The MPI_Op for `op` on `dtype`: MPI_SUM for fp32/int32/uint16 sums, MPI_MAX for the integer max,
// and tierzero's own commutative ops for bf16/fp16 sums and for every floating-point max (these
// return NaN when any input is NaN, so an overflow check sees a NaN on any rank).
MPI_Op mpi_reduce_op(DType dtype, ReduceOp op);

class MpiProgress;
struct MpiOp;

// Communicator over an MPI communicator it owns (a duplicate, so its collectives never match other
// code's on the parent). A call checks its arguments, opens the buffers (DeviceAccess) and queues the
// collective; the communicator's progress thread starts it (MPI_Ixxx, in call order), advances it
// (MPI_Test), and completes or fails its Work. After MPI_Init_thread, that thread is the only one that
// calls MPI, except for the constructor and destructor (MPI_Comm_dup / MPI_Comm_free, while the
// thread is idle) and abort. A Work it returns must not outlive it.
//
// Deadlines: when a collective in flight has not completed timeout() (as set at its call) after it
// was called, the communicator fails: every wait() on its Works, and every later call, throws one
// message naming that collective (the oldest, if several are late: kind, number, size, group, time
// waited, how many others were in flight). If no host thread has taken that error within
// min(timeout, 10 s), the progress thread logs it and ends the job (abort(1)), so a rank whose main
// thread is stuck elsewhere still ends.
class MpiCommunicator final : public Communicator {
 public:
  // Duplicates `parent` (collective over `parent`); `label` names the group in error messages. Make
  // and destroy communicators while no other one has collectives in flight (MPI_Comm_dup blocks
  // other progress threads out of MPI until every rank has joined it).
  MpiCommunicator(MPI_Comm parent, std::string label);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override;

  std::unique_ptr<Work> reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype,
                                       ReduceOp op = ReduceOp::sum) override;
  std::unique_ptr<Work> all_gather(const void* send, void* recv, std::size_t count, DType dtype) override;
  std::unique_ptr<Work> all_reduce(void* buf, std::size_t count, DType dtype,
                                   ReduceOp op = ReduceOp::sum) override;
  std::unique_ptr<Work> broadcast(void* buf, std::size_t count, DType dtype, int root) override;
  std::unique_ptr<Work> barrier() override;
  void abort(int code) noexcept override;
  // Open MPI's libnbc allocates a temporary twice a reduce-scatter's message and once an all-reduce's:
  // pieces bound them (Communicator::set_piece_bytes).
  void set_piece_bytes(std::size_t bytes) override { piece_bytes_.store(bytes, std::memory_order_relaxed); }
  std::size_t piece_bytes() const override { return piece_bytes_.load(std::memory_order_relaxed); }

  // The underlying communicator, for benchmarks that time the same call made straight through MPI.
  // MPI_THREAD_SERIALIZED: call MPI directly (on this or any communicator) only while no collective
  // is in flight on any MpiCommunicator of the process, i.e. after waiting for all of them; the
  // progress threads call MPI whenever one is.
  MPI_Comm mpi_comm() const { return comm_; }

 private:
  std::shared_ptr<MpiOp> new_op(Collective kind, std::size_t count, DType dtype, const void* send,
                                const void* recv);
  std::unique_ptr<Work> submit(const std::shared_ptr<MpiOp>& op, double elements_sent);
  // Marks `o` a reduction and, when its `count` units of `unit_bytes` (a reduce-scatter's unit: one element
  // of every rank's block) exceed the piece size, splits it into pieces; whether it did.
  bool in_pieces(MpiOp& o, std::size_t count, std::size_t unit_bytes) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  std::string label_;
  int rank_ = 0;
  int size_ = 1;
  std::atomic<std::size_t> piece_bytes_{0};
  std::unique_ptr<MpiProgress> progress_;  // joined before comm_ is freed
};

}  // namespace tz
