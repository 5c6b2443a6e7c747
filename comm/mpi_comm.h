// The MPI backend of Communicator: non-blocking collectives on host buffers over a duplicate of
// MPI_COMM_WORLD, each waited on with a deadline, plus the MPI handles benchmarks need to compare.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "comm/communicator.h"

namespace tz {

// Initialises MPI (MPI_Init_thread with MPI_THREAD_FUNNELED) the first time it is called in this
// process, unless something else already did, and then registers MPI_Finalize to run at exit.
// make_mpi_world() calls it; call it directly only to use MPI before making a communicator.
void ensure_mpi_initialized();

// The MPI datatype a DType travels as. bf16 and fp16 travel as 2-byte MPI_UINT16_T: MPI has no
// 16-bit float types, and the reductions below know how to add them.
MPI_Datatype mpi_datatype(DType dtype);

// The MPI_Op for `op` on `dtype`: MPI_SUM for fp32/int32/uint16 sums, MPI_MAX for the integer max,
// and tierzero's own commutative ops for bf16/fp16 sums and for every floating-point max (these
// return NaN when any input is NaN, so an overflow check sees a NaN on any rank).
MPI_Op mpi_reduce_op(DType dtype, ReduceOp op);

// Communicator over an MPI communicator it owns (a duplicate, so its collectives never match other
// code's on the parent). A Work it returns must not outlive it.
class MpiCommunicator final : public Communicator {
 public:
  // Duplicates `parent` (collective over `parent`); `label` names the group in error messages.
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

  // The underlying communicator, for benchmarks that time the same call made straight through MPI.
  MPI_Comm mpi_comm() const { return comm_; }

 private:
  std::unique_ptr<Work> start(Collective kind, std::size_t count, DType dtype, double elements_sent,
                              MPI_Request request);

  MPI_Comm comm_ = MPI_COMM_NULL;
  std::string label_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace tz
