// MPI backend: each collective starts with MPI's non-blocking call and is waited on by polling
// MPI_Test against a deadline; bf16/fp16 reductions, which MPI lacks, are user-defined MPI_Ops.
#include "comm/mpi_comm.h"

#include <time.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "core/error.h"

namespace tz {
namespace {

using Clock = std::chrono::steady_clock;

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

// Max that returns NaN if either side is NaN (MPI_MAX's result with a NaN depends on the order the
// operands arrive in). Keeps the winner's bits, so a 16-bit max never rounds.
template <typename T>
void nan_max(void* in, void* inout, int* len, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0, n = *len; i < n; ++i) {
    float x = to_float(a[i]), y = to_float(b[i]);
    if (x != x || x > y) b[i] = a[i];
  }
}

// What this process set up in MPI: whether it called MPI_Init (and so must finalise), and the
// user-defined reductions, which can only be created after MPI_Init and then live as long as MPI.
struct MpiProcess {
  bool initialized_here = false;
  MPI_Op bf16_sum = MPI_OP_NULL, fp16_sum = MPI_OP_NULL;
  MPI_Op f32_max = MPI_OP_NULL, bf16_max = MPI_OP_NULL, fp16_max = MPI_OP_NULL;
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
    int initialized = 0;
    TZ_MPI_CHECK(MPI_Initialized(&initialized));
    if (!initialized) {
      int provided = 0;
      // Open MPI 4.1's default algorithm for the non-blocking all-reduce (libnbc) runs 2-3x slower
      // than blocking MPI_Allreduce from 256 KiB up at 2 ranks; the ring (1) matches it (4 MiB:
      // 568 us vs 1491 us; perf/README.md). Gradient buckets are that large, so the ring is our
      // default; a user's own setting of the variable wins (overwrite = 0).
      ::setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", 0);
      // FUNNELED: OpenMP threads compute, only the main thread calls MPI.
      TZ_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
      TZ_CHECK(provided >= MPI_THREAD_FUNNELED, "MPI provides thread level ", provided,
               ", below MPI_THREAD_FUNNELED");
      p.initialized_here = true;
      // Registered after MPI_Init, so it runs before the destructors of statics made earlier.
      std::atexit(finalize_mpi_at_exit);
    }
    TZ_MPI_CHECK(MPI_Op_create(&sum16<bf16>, 1, &p.bf16_sum));
    TZ_MPI_CHECK(MPI_Op_create(&sum16<fp16>, 1, &p.fp16_sum));
    TZ_MPI_CHECK(MPI_Op_create(&nan_max<float>, 1, &p.f32_max));
    TZ_MPI_CHECK(MPI_Op_create(&nan_max<bf16>, 1, &p.bf16_max));
    TZ_MPI_CHECK(MPI_Op_create(&nan_max<fp16>, 1, &p.fp16_max));
    return p;
  }();
  return process;
}

// A wait polls without sleeping for its first kSpinPolls polls and kSpinTime, then sleeps kSleepNs
// between polls. Each round of Open MPI's non-blocking algorithms advances only at a poll, so a
// sleep delays the collective by up to a sleep (50 us plus up to 50 us of Linux's default timer
// slack): spinning through the first millisecond keeps messages up to a few MiB at the speed of
// pure polling (measured on 2 cores, fp32 all_reduce at 2 ranks: 1 MiB in ~300 us this way or
// polling only, ~590 us when sleeping after 1000 polls; within ~10% of polling only up to 16 MiB),
// and bounds the core a waiting rank takes from computing ones to ~1 ms per wait.
constexpr int kSpinPolls = 1000;
constexpr std::chrono::microseconds kSpinTime{1000};
constexpr long kSleepNs = 50'000;

bool overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
  auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
  return a_bytes && b_bytes && x < y + b_bytes && y < x + a_bytes;
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
    case DType::i32:
    case DType::u16:
      return op == ReduceOp::sum ? MPI_SUM : MPI_MAX;
  }
  TZ_FAIL("no MPI reduction for dtype ", int(dtype));
}

// One collective in flight: its request and what error messages and statistics need.
class MpiWork final : public Work {
 public:
  MpiWork(MpiCommunicator& comm, Collective kind, std::size_t count, DType dtype, MPI_Request request)
      : comm_(comm), kind_(kind), count_(count), dtype_(dtype), request_(request) {}

  ~MpiWork() override {
    if (done_) return;
    if (!failed_) {
      try {
        wait();
        return;
      } catch (const std::exception& e) {
        log_line(std::string("unfinished collective destroyed: ") + e.what());
      }
    }
    // The request is left pending on purpose. MPI forbids MPI_Request_free on a non-blocking
    // collective, and even where it is accepted, MPI could still write into the caller's buffers
    // after they are freed. Leaking it is safe as long as the job ends, which the caller's error
    // path does with Communicator::abort.
    log_line(describe() +
             " never completed; its MPI request is left pending (never freed) and the job "
             "must be aborted");
  }

  bool test() override {
    if (done_ || failed_) return done_;
    int flag = 0;
    int rc = MPI_Test(&request_, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) failed_ = true;  // nothing left to wait for; the destructor must not poll it
    TZ_MPI_CHECK(rc);
    done_ = flag != 0;
    return done_;
  }

  void wait() override {
    if (done_) return;
    TZ_CHECK(!failed_, describe(), " already failed; it cannot be waited on again");
    const auto start = Clock::now();
    const auto deadline = start + comm_.timeout();
    auto account = [&] {
      comm_.stats().wait_seconds[int(kind_)] += std::chrono::duration<double>(Clock::now() - start).count();
    };
    try {
      // Open MPI 4.1 progresses non-blocking collectives only inside MPI calls (it has no progress
      // thread), so waiting means calling MPI_Test until it says done. After a burst of polls the
      // loop sleeps between them, so that on an oversubscribed machine a waiting rank gives its core
      // to the ranks still computing (which the waiter depends on).
      for (int polls = 0; !test(); ++polls) {
        const auto now = Clock::now();
        if (now >= deadline) {
          failed_ = true;
          const double waited = std::chrono::duration<double>(now - start).count();
          char secs[32];
          std::snprintf(secs, sizeof secs, "%.2f", waited);
          TZ_FAIL(describe(), " timed out after ", secs, " s (the communicator's timeout is ",
                  comm_.timeout().count(),
                  " ms): not every rank has joined it. Which ranks are missing cannot be identified "
                  "through MPI's non-blocking collectives. A rank has died or is stuck (look for its "
                  "error above, or for a rank blocked in a different call or collective); the job will "
                  "be aborted.");
        }
        if (polls >= kSpinPolls && now - start >= kSpinTime) {
          timespec ts{0, kSleepNs};
          nanosleep(&ts, nullptr);
        }
      }
    } catch (...) {
      account();
      throw;
    }
    account();
  }

 private:
  std::string describe() const {
    std::string s = collective_name(kind_);
    if (kind_ != Collective::barrier)
      s += detail::concat(" of ", count_, " ", dtype_name(dtype_), " elements");
    return s + " on " + comm_.name();
  }

  MpiCommunicator& comm_;
  Collective kind_;
  std::size_t count_;
  DType dtype_;
  MPI_Request request_;
  bool done_ = false;
  bool failed_ = false;  // timed out or MPI reported an error: the request may never complete
};

MpiCommunicator::MpiCommunicator(MPI_Comm parent, std::string label) : label_(std::move(label)) {
  ensure_mpi_initialized();
  TZ_MPI_CHECK(MPI_Comm_dup(parent, &comm_));
  // Errors come back as return codes, so TZ_MPI_CHECK turns them into tz::Error with context and
  // the top-level handler aborts the job, instead of MPI killing it with no tierzero context.
  TZ_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  TZ_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  TZ_MPI_CHECK(MPI_Comm_size(comm_, &size_));
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  // After MPI_Finalize the handle is gone with MPI; freeing it then would be an error.
  if (!finalized && comm_ != MPI_COMM_NULL && MPI_Comm_free(&comm_) != MPI_SUCCESS)
    log_line("MPI_Comm_free failed for " + name());
}

std::string MpiCommunicator::name() const { return detail::concat(label_, " (", size_, " ranks)"); }

std::unique_ptr<Work> MpiCommunicator::start(Collective kind, std::size_t count, DType dtype,
                                             double elements_sent, MPI_Request request) {
  const int k = int(kind);
  stats_.calls[k] += 1;
  stats_.elements_sent[k] += elements_sent;
  stats_.bytes_sent[k] += elements_sent * double(dtype_size(dtype));
  return std::make_unique<MpiWork>(*this, kind, count, dtype, request);
}

std::unique_ptr<Work> MpiCommunicator::reduce_scatter(const void* send, void* recv, std::size_t count,
                                                      DType dtype, ReduceOp op) {
  const std::size_t es = dtype_size(dtype), total = count * std::size_t(size_);
  // MPI counts are ints, and Open MPI computes size x count as an int inside.
  TZ_CHECK(total <= std::size_t(INT_MAX), "reduce_scatter of ", count, " elements per rank x ", size_,
           " ranks exceeds MPI's int count; split the message");
  TZ_CHECK(count == 0 || (send && recv), "reduce_scatter needs send and recv buffers");
  const bool in_place = send == recv;
  TZ_CHECK(in_place || !overlap(send, total * es, recv, count * es),
           "reduce_scatter's send and recv buffers overlap without being the same (in place) buffer");
  MPI_Request req;
  TZ_MPI_CHECK(MPI_Ireduce_scatter_block(in_place ? MPI_IN_PLACE : send, recv, int(count),
                                         mpi_datatype(dtype), mpi_reduce_op(dtype, op), comm_, &req));
  return start(Collective::reduce_scatter, count, dtype, double(size_ - 1) * double(count), req);
}

std::unique_ptr<Work> MpiCommunicator::all_gather(const void* send, void* recv, std::size_t count,
                                                  DType dtype) {
  const std::size_t es = dtype_size(dtype), total = count * std::size_t(size_);
  TZ_CHECK(total <= std::size_t(INT_MAX), "all_gather of ", count, " elements per rank x ", size_,
           " ranks exceeds MPI's int count; split the message");
  TZ_CHECK(count == 0 || (send && recv), "all_gather needs send and recv buffers");
  const bool in_place = count > 0 && send == static_cast<const char*>(recv) + std::size_t(rank_) * count * es;
  TZ_CHECK(in_place || !overlap(send, count * es, recv, total * es),
           "all_gather's send buffer overlaps recv without being this rank's slice of it (in place)");
  MPI_Request req;
  const MPI_Datatype dt = mpi_datatype(dtype);
  if (in_place)
    TZ_MPI_CHECK(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, int(count), dt, comm_, &req));
  else
    TZ_MPI_CHECK(MPI_Iallgather(send, int(count), dt, recv, int(count), dt, comm_, &req));
  return start(Collective::all_gather, count, dtype, double(size_ - 1) * double(count), req);
}

std::unique_ptr<Work> MpiCommunicator::all_reduce(void* buf, std::size_t count, DType dtype, ReduceOp op) {
  TZ_CHECK(count <= std::size_t(INT_MAX), "all_reduce of ", count, " elements exceeds MPI's int count");
  TZ_CHECK(count == 0 || buf, "all_reduce needs a buffer");
  MPI_Request req;
  TZ_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, buf, int(count), mpi_datatype(dtype), mpi_reduce_op(dtype, op),
                              comm_, &req));
  return start(Collective::all_reduce, count, dtype, 2.0 * double(size_ - 1) * double(count) / double(size_),
               req);
}

std::unique_ptr<Work> MpiCommunicator::broadcast(void* buf, std::size_t count, DType dtype, int root) {
  TZ_CHECK(root >= 0 && root < size_, "broadcast root ", root, " is not a rank of ", name());
  TZ_CHECK(count <= std::size_t(INT_MAX), "broadcast of ", count, " elements exceeds MPI's int count");
  TZ_CHECK(count == 0 || buf, "broadcast needs a buffer");
  MPI_Request req;
  TZ_MPI_CHECK(MPI_Ibcast(buf, int(count), mpi_datatype(dtype), root, comm_, &req));
  // Only the root sends; in a world of one nothing is sent at all.
  const double sent = rank_ == root && size_ > 1 ? double(count) : 0.0;
  return start(Collective::broadcast, count, dtype, sent, req);
}

std::unique_ptr<Work> MpiCommunicator::barrier() {
  MPI_Request req;
  TZ_MPI_CHECK(MPI_Ibarrier(comm_, &req));
  return start(Collective::barrier, 0, DType::f32, 0.0, req);
}

void MpiCommunicator::abort(int code) noexcept {
  // The job is ending: make sure what this rank printed gets out first.
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; this is for an MPI that does
}

std::unique_ptr<Communicator> make_mpi_world() {
  return std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, "MPI_COMM_WORLD");
}

}  // namespace tz
