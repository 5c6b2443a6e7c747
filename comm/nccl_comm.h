// The NCCL backend of Communicator: collectives on GPU memory over one ncclComm per process, run on
// the communicator's own CUDA stream, with a watchdog that aborts the communicator when a deadline
// passes (comm/nccl_watchdog.h). Built only with the CUDA backend (target comm_nccl).
#pragma once

#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/world.h"
#include "core/cuda/cuda_stream.h"
#include "core/device.h"

namespace tz::detail {
// NCCL's description of its last error ("" when it has none to give).
inline const char* nccl_last_error() {
  const char* s = ncclGetLastError(nullptr);  // the comm argument is unused by NCCL
  return s ? s : "";
}
}  // namespace tz::detail

// TZ_NCCL_CHECK(call): an NCCL call that must return ncclSuccess (ncclInProgress, which a
// non-blocking communicator returns, is the caller's to handle before this check).
#define TZ_NCCL_CHECK(call)                                                                              \
  do {                                                                                                   \
    ncclResult_t tz_nccl_rc_ = (call);                                                                   \
    TZ_CHECK_GEN("NCCL call failed", tz_nccl_rc_ == ncclSuccess, #call, ncclGetErrorString(tz_nccl_rc_), \
                 " (", int(tz_nccl_rc_), "): ", ::tz::detail::nccl_last_error());                        \
  } while (0)

static_assert(NCCL_VERSION_CODE >= NCCL_VERSION(2, 19, 0),
              "comm_nccl needs NCCL 2.19 or newer (non-blocking communicators with ncclCommGetAsyncError, "
              "ncclBfloat16, ncclGetLastError)");

namespace tz {

class NcclWatchdog;

// The GPU a rank uses: its local rank modulo the GPUs it sees. Under Slurm with --gpus-per-task (or
// any launcher that sets CUDA_VISIBLE_DEVICES per rank) each rank sees one GPU, so gpu_count is 1
// and every rank uses index 0, its own GPU. With all GPUs visible to every rank, local rank k uses
// GPU k. More local ranks than GPUs makes ranks share a GPU, which NCCL refuses at init (two ranks
// of one communicator on one device): that error, not this function, reports it.
int local_gpu(const WorldInfo& world, int gpu_count);

// Communicator over one ncclComm on one GPU. Collectives run in call order on the communicator's
// stream (stream()); a Work records an event after its collective.
//
// Ordering with the producer of a collective's input: by default the caller makes sure the input is
// ready before it calls (the engine records an event on its compute stream and synchronizes it, as
// zero/grad_reducer.cc's launch() does), so the communication stream just runs collectives in call
// order. set_producer_stream(s) makes each collective instead wait on the device for everything
// enqueued on `s` up to the call (an event recorded on `s`, cudaStreamWaitEvent on the comm stream):
// no host synchronisation, cheaper, and the caller may call right after enqueueing the producer.
//
// Completion: Work::wait() blocks the host (polling the event and NCCL's asynchronous error, with the
// deadline); Work::wait(stream) makes `stream` wait for the collective without blocking the host. A
// Work destroyed unfinished waits for the collective (as Communicator says) unless wait(stream) was
// called on it: then the waiting stream is ordered after the collective and the host need not block.
//
// Deadlines (as MpiCommunicator): a collective not complete timeout() (as set at its call) after its
// call fails the communicator: it is aborted (ncclCommAbort, so its kernels stop spinning on a dead
// peer), and every wait() on its Works, and every later call, throws one message naming that
// collective (the oldest, if several are late: kind, number, size, group, time waited, how many
// others were in flight). An asynchronous NCCL error (a peer's network failure) fails it the same
// way. The watchdog thread checks every ~100 ms; if no host thread has taken the error within
// min(timeout, 10 s), it logs the error and ends the job through the bootstrap communicator's abort.
//
// Statistics: elements and bytes sent per collective by CommStats's bus-bandwidth convention (the
// same counts as MPI); busy_seconds is GPU time measured with timing events, from the moment the
// comm stream starts the collective (after the producer's work it waits on) to its completion, added
// once the collective is seen complete (by a wait, a done() or the watchdog).
//
// Reductions: sum and max in fp32, bf16, fp16, fp64 and int32 (NCCL adds 16-bit floats with one
// rounding per pairwise add, as the MPI backend does). Unlike the MPI backend, NCCL's max need not
// propagate a NaN; reduce an overflow flag with sum (NaN and Inf survive it) if that matters. uint16
// travels as bytes in all_gather and broadcast and has no reduction.
//
// Groups (group_start/group_end): the collectives called in an open group are checked, numbered and
// ordered after the producer stream at their call as any other, but NCCL gets them at group_end(),
// all between one ncclGroupStart and ncclGroupEnd (one launch; NCCL may run them concurrently); their
// end events are recorded after it. Their Works are handed out at the call and throw if waited on
// before group_end(). A failure to launch the group fails the communicator (every Work of the group
// then throws its message).
//
// Every rank's process calls collectives from one thread at a time (they are serialized inside).
class NcclCommunicator final : public Communicator {
 public:
  // Collective over `bootstrap` (every rank of it calls this): rank 0 makes the NCCL unique id and
  // broadcasts it over `bootstrap`; each rank then joins on GPU `gpu` (made current on this thread).
  // Initialisation is non-blocking and fails with tz::Error after bootstrap.timeout(), which the new
  // communicator also takes as its timeout. `bootstrap` must outlive this communicator (abort() ends
  // the job through it). The barrier's buffer comes from `device_memory` (the device's allocator, under
  // its budget), which must outlive the communicator too.
  NcclCommunicator(Communicator& bootstrap, int gpu, Allocator& device_memory);
  // Never throws: waits for the watchdog thread, then destroys the ncclComm (finalised with a
  // deadline; aborted instead if it has failed or does not quiesce in time), then frees the barrier's
  // buffer.
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override;

  std::unique_ptr<Work> reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype,
                                       ReduceOp op = ReduceOp::sum) override;
  std::unique_ptr<Work> all_gather(const void* send, void* recv, std::size_t count, DType dtype) override;
  std::unique_ptr<Work> all_reduce(void* buf, std::size_t count, DType dtype,
                                   ReduceOp op = ReduceOp::sum) override;
  std::unique_ptr<Work> broadcast(void* buf, std::size_t count, DType dtype, int root) override;
  // NCCL has no barrier: an all_reduce of one int32 on a 4-byte device buffer of the communicator.
  std::unique_ptr<Work> barrier() override;
  // ncclCommAbort (so this rank's kernels stop), then the bootstrap's abort(code).
  void abort(int code) noexcept override;
  // See the class comment. group_start throws if a group is open already; group_end if none is.
  void group_start() override;
  void group_end() override;

  // See the class comment; nullptr (the default) turns it off. `s` must be a stream of the CUDA
  // device and outlive its use here. Set it while no collective is being called.
  void set_producer_stream(Stream* s) override { producer_.store(s, std::memory_order_release); }
  bool follows_producer_stream() const override { return producer_.load(std::memory_order_acquire) != nullptr; }
  // The stream collectives run on (for callers that want to order other work after it directly).
  cuda::CudaStream& stream() { return *stream_; }
  int gpu() const { return gpu_; }

 private:
  struct Launch;
  struct Grouped;
  std::unique_ptr<Work> launch(const Launch& l);
  void make_current() const;

  Communicator& bootstrap_;
  int gpu_ = 0;
  int rank_ = 0;
  int size_ = 1;
  // Made after init has made `gpu` current (streams and events belong to the current device).
  std::unique_ptr<cuda::CudaStream> stream_;        // collectives run here, in call order
  std::unique_ptr<cuda::CudaEvent> producer_done_;  // recorded on the producer stream at each call
  std::atomic<Stream*> producer_{nullptr};
  Buffer<std::int32_t> barrier_buf_;  // one int32 of device memory for barrier()
  std::mutex issue_mu_;         // one collective enqueued at a time, in numbering order
  std::uint64_t seq_ = 0;
  bool group_open_ = false;       // guarded by issue_mu_, as is group_
  std::vector<Grouped> group_;    // the open group's collectives, in call order
  std::unique_ptr<NcclWatchdog> watchdog_;  // owns the ncclComm; destroyed before the stream and the buffer
};

// The NCCL world: an NcclCommunicator over every rank of `bootstrap`, on the cuda device `dev`'s GPU, its
// barrier buffer under the device's budget.
std::unique_ptr<Communicator> make_nccl_world(Communicator& bootstrap, Device& dev);

}  // namespace tz
