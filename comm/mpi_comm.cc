// MPI backend: MPI's initialisation and the process-wide MPI lock, the datatypes and the reductions
// MPI lacks (bf16/fp16 sums, NaN-propagating max), and each collective's argument checks before it is
// handed to the progress thread.
#include "comm/mpi_comm.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "comm/mpi_progress.h"
#include "core/error.h"
#include "core/poison.h"

namespace tz {
namespace {

// Reductions on 16-bit floats: each pairwise combine converts both operands to float, combines them
// and rounds the result back once. MPI applies the op to whole incoming segments in place, so this
// needs no fp32 staging buffer the size of the message, and rounds exactly once per pairwise add
// (the same arithmetic a 16-bit ring reduction on a GPU does).
template <typename T>
void sum16(void* in, void* inout, int* len, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0, n = *len; i < n; ++i) b[i] = from_float<T>(to_float(a[i]) + to_float(b[i]));
}

double as_double(double x) { return x; }
template <typename T>
double as_double(T x) {
  return to_float(x);
}

// Max that returns NaN if either side is NaN (MPI_MAX's result with a NaN depends on the order the
// operands arrive in). Keeps the winner's bits, so a 16-bit max never rounds.
template <typename T>
void nan_max(void* in, void* inout, int* len, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0, n = *len; i < n; ++i) {
    double x = as_double(a[i]), y = as_double(b[i]);
    if (x != x || x > y) b[i] = a[i];
  }
}

// What this process set up in MPI: whether it called MPI_Init (and so must finalise), and the
// user-defined reductions, which can only be created after MPI_Init and then live as long as MPI.
struct MpiProcess {
  bool initialized_here = false;
  MPI_Op bf16_sum = MPI_OP_NULL, fp16_sum = MPI_OP_NULL;
  MPI_Op f32_max = MPI_OP_NULL, bf16_max = MPI_OP_NULL, fp16_max = MPI_OP_NULL, f64_max = MPI_OP_NULL;
};

void finalize_mpi_at_exit() {
  int finalized = 0;
  if (MPI_Finalized(&finalized) == MPI_SUCCESS && !finalized) MPI_Finalize();
}

// A function-local static: MPI is initialised by the first caller, once, and by no static
// initialiser (the process's only MPI state besides the communicators the caller owns).
const MpiProcess& mpi_process() {
  static const MpiProcess process = [] {
    MpiProcess p;
    int initialized = 0, provided = 0;
    TZ_MPI_CHECK(MPI_Initialized(&initialized));
    if (!initialized) {
      // Open MPI 4.1's default algorithm for the non-blocking all-reduce (libnbc) runs 2-3x slower
      // than blocking MPI_Allreduce from 256 KiB up at 2 ranks; the ring (1) matches it (4 MiB:
      // 568 us vs 1491 us; perf/README.md). Gradient buckets are that large, so the ring is our
      // default; a user's own setting of the variable wins (overwrite = 0).
      ::setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", 0);
      // SERIALIZED: each communicator's progress thread calls MPI, never two threads at once (they
      // take mpi_call_mutex()); OpenMP threads compute and never call MPI.
      TZ_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided));
      p.initialized_here = true;
      // Registered after MPI_Init, so it runs before the destructors of statics made earlier.
      std::atexit(finalize_mpi_at_exit);
    } else {
      TZ_MPI_CHECK(MPI_Query_thread(&provided));
    }
    TZ_CHECK(provided >= MPI_THREAD_SERIALIZED, "MPI provides thread level ", provided,
             ", below MPI_THREAD_SERIALIZED, which the communicators' progress threads need");
    TZ_MPI_CHECK(MPI_Op_create(&sum16<bf16>, 1, &p.bf16_sum));
    TZ_MPI_CHECK(MPI_Op_create(&sum16<fp16>, 1, &p.fp16_sum));
    TZ_MPI_CHECK(MPI_Op_create(&nan_max<float>, 1, &p.f32_max));
    TZ_MPI_CHECK(MPI_Op_create(&nan_max<bf16>, 1, &p.bf16_max));
    TZ_MPI_CHECK(MPI_Op_create(&nan_max<fp16>, 1, &p.fp16_max));
    TZ_MPI_CHECK(MPI_Op_create(&nan_max<double>, 1, &p.f64_max));
    return p;
  }();
  return process;
}

}  // namespace

void ensure_mpi_initialized() { (void)mpi_process(); }

MPI_Datatype mpi_datatype(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::i32:
      return MPI_INT32_T;
    case DType::bf16:
    case DType::f16:
    case DType::u16:
      return MPI_UINT16_T;
    case DType::f64:
      return MPI_DOUBLE;
  }
  TZ_FAIL("no MPI datatype for dtype ", int(dtype));
}

MPI_Op mpi_reduce_op(DType dtype, ReduceOp op) {
  const MpiProcess& p = mpi_process();
  switch (dtype) {
    case DType::f32:
      return op == ReduceOp::sum ? MPI_SUM : p.f32_max;
    case DType::bf16:
      return op == ReduceOp::sum ? p.bf16_sum : p.bf16_max;
    case DType::f16:
      return op == ReduceOp::sum ? p.fp16_sum : p.fp16_max;
    case DType::f64:
      return op == ReduceOp::sum ? MPI_SUM : p.f64_max;
    case DType::i32:
    case DType::u16:
      return op == ReduceOp::sum ? MPI_SUM : MPI_MAX;
  }
  TZ_FAIL("no MPI reduction for dtype ", int(dtype));
}

std::timed_mutex& mpi_call_mutex() {
  static std::timed_mutex mu;
  return mu;
}

void abort_mpi_job(int code) noexcept {
  // The job is ending: make sure what this rank printed gets out first.
  std::fflush(stdout);
  std::fflush(stderr);
  // Stay out of a progress thread's MPI call if it ends soon; a thread stuck in MPI must not stop the
  // abort, so after a second it goes ahead regardless.
  std::unique_lock<std::timed_mutex> lk(mpi_call_mutex(), std::defer_lock);
  (void)lk.try_lock_for(std::chrono::seconds(1));
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; this is for an MPI that does
}

MpiCommunicator::MpiCommunicator(MPI_Comm parent, std::string label) : label_(std::move(label)) {
  ensure_mpi_initialized();
  {
    std::lock_guard<std::timed_mutex> mpi(mpi_call_mutex());
    TZ_MPI_CHECK(MPI_Comm_dup(parent, &comm_));
    // Errors come back as return codes, so TZ_MPI_CHECK turns them into tz::Error with context and
    // the top-level handler aborts the job, instead of MPI killing it with no tierzero context.
    TZ_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    TZ_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    TZ_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  }
  progress_ = std::make_unique<MpiProgress>(comm_, size_, name(), stats_);
}

MpiCommunicator::~MpiCommunicator() {
  const bool failed = progress_ && progress_->failed();
  progress_.reset();  // joins the thread: nothing calls MPI on comm_ any more
  // A failed communicator has requests that never completed: freeing it could hang or let MPI match
  // their messages elsewhere, and the job is ending anyway. After MPI_Finalize the handle is gone
  // with MPI; freeing it then would be an error.
  std::lock_guard<std::timed_mutex> mpi(mpi_call_mutex());
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!failed && !finalized && comm_ != MPI_COMM_NULL && MPI_Comm_free(&comm_) != MPI_SUCCESS)
    log_line("MPI_Comm_free failed for " + name());
}

std::string MpiCommunicator::name() const { return detail::concat(label_, " (", size_, " ranks)"); }

std::shared_ptr<MpiOp> MpiCommunicator::new_op(Collective kind, std::size_t count, DType dtype,
                                               const void* send, const void* recv) {
  auto op = std::make_shared<MpiOp>();
  op->call.kind = kind;
  op->count = count;
  op->dtype = dtype;
  op->called = MpiClock::now();
  op->timeout = timeout();
  // Device memory (poisoned in the checking build) is open to MPI until the op completes.
  op->access = DeviceAccess{send, recv};
  return op;
}

bool MpiCommunicator::in_pieces(MpiOp& o, std::size_t count, std::size_t unit_bytes) const {
  o.reducing = true;
  const std::size_t piece = piece_bytes();
  if (!piece || size_ == 1 || count * unit_bytes <= piece) return false;
  o.piece = std::max<std::size_t>(1, piece / unit_bytes);
  o.pieces = (count + o.piece - 1) / o.piece;
  return true;
}

std::unique_ptr<Work> MpiCommunicator::submit(const std::shared_ptr<MpiOp>& op, double elements_sent) {
  std::unique_ptr<Work> work = progress_->submit(op);
  stats_.add_call(op->call.kind, elements_sent, elements_sent * double(dtype_size(op->dtype)));
  return work;
}

std::unique_ptr<Work> MpiCommunicator::reduce_scatter(const void* send, void* recv, std::size_t count,
                                                      DType dtype, ReduceOp op) {
  // MPI counts are ints, and Open MPI computes size x count as an int inside.
  TZ_CHECK(count * std::size_t(size_) <= std::size_t(INT_MAX), "reduce_scatter of ", count,
           " elements per rank x ", size_, " ranks exceeds MPI's int count; split the message");
  const bool in_place = reduce_scatter_buffers(send, recv, count, dtype, rank_, size_) == BufferUse::in_place;
  auto o = new_op(Collective::reduce_scatter, count, dtype, send, recv);
  // Pieces of every rank's block are packed by the progress thread into its staging and each reduced
  // straight into this rank's recv (in place, the send buffer's own slice, which later pieces never read).
  const bool pieces = in_pieces(*o, count, std::size_t(size_) * dtype_size(dtype));
  const bool whole_in_place = in_place && !pieces;
  // MPI_IN_PLACE leaves the result in the buffer's first `count` elements; NCCL's convention wants it
  // in this rank's slice, which the progress thread copies it to (no overlap for rank >= 1).
  o->call.send = whole_in_place ? MPI_IN_PLACE : send;
  o->call.recv = whole_in_place ? const_cast<void*>(send) : recv;
  o->call.count = int(count);
  o->call.type = mpi_datatype(dtype);
  o->call.reduce = mpi_reduce_op(dtype, op);
  if (whole_in_place && rank_ > 0) {
    o->move_from = send;
    o->move_to = recv;
    o->move_bytes = count * dtype_size(dtype);
  }
  return submit(o, bus_elements_sent(Collective::reduce_scatter, count, rank_, size_));
}

std::unique_ptr<Work> MpiCommunicator::all_gather(const void* send, void* recv, std::size_t count,
                                                  DType dtype) {
  TZ_CHECK(count * std::size_t(size_) <= std::size_t(INT_MAX), "all_gather of ", count,
           " elements per rank x ", size_, " ranks exceeds MPI's int count; split the message");
  const bool in_place = all_gather_buffers(send, recv, count, dtype, rank_, size_) == BufferUse::in_place;
  auto o = new_op(Collective::all_gather, count, dtype, send, recv);
  o->call.send = in_place ? MPI_IN_PLACE : send;
  o->call.recv = recv;
  o->call.count = int(count);
  o->call.type = mpi_datatype(dtype);
  return submit(o, bus_elements_sent(Collective::all_gather, count, rank_, size_));
}

std::unique_ptr<Work> MpiCommunicator::all_reduce(void* buf, std::size_t count, DType dtype, ReduceOp op) {
  TZ_CHECK(count <= std::size_t(INT_MAX), "all_reduce of ", count, " elements exceeds MPI's int count");
  TZ_CHECK(count == 0 || buf, "all_reduce needs a buffer");
  auto o = new_op(Collective::all_reduce, count, dtype, buf, nullptr);
  in_pieces(*o, count, dtype_size(dtype));  // contiguous pieces, each reduced in place
  o->call.send = MPI_IN_PLACE;
  o->call.recv = buf;
  o->call.count = int(count);
  o->call.type = mpi_datatype(dtype);
  o->call.reduce = mpi_reduce_op(dtype, op);
  return submit(o, bus_elements_sent(Collective::all_reduce, count, rank_, size_));
}

std::unique_ptr<Work> MpiCommunicator::broadcast(void* buf, std::size_t count, DType dtype, int root) {
  TZ_CHECK(root >= 0 && root < size_, "broadcast root ", root, " is not a rank of ", name());
  TZ_CHECK(count <= std::size_t(INT_MAX), "broadcast of ", count, " elements exceeds MPI's int count");
  TZ_CHECK(count == 0 || buf, "broadcast needs a buffer");
  auto o = new_op(Collective::broadcast, count, dtype, buf, nullptr);
  o->call.recv = buf;
  o->call.count = int(count);
  o->call.type = mpi_datatype(dtype);
  o->call.root = root;
  return submit(o, bus_elements_sent(Collective::broadcast, count, rank_, size_, root));
}

std::unique_ptr<Work> MpiCommunicator::barrier() {
  return submit(new_op(Collective::barrier, 0, DType::f32, nullptr, nullptr),
                bus_elements_sent(Collective::barrier, 0, rank_, size_));
}

void MpiCommunicator::abort(int code) noexcept { abort_mpi_job(code); }

std::unique_ptr<Communicator> make_mpi_world() {
  return std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, "MPI_COMM_WORLD");
}

}  // namespace tz
