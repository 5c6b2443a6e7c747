// NCCL backend: joining the NCCL world over the MPI bootstrap (unique id, non-blocking init with a
// deadline), the dtype and reduction mapping, and each collective's argument checks before it is
// enqueued on the communication stream and handed to the watchdog.
#include "comm/nccl_comm.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <utility>

#include "comm/nccl_handle.h"
#include "comm/nccl_watchdog.h"
#include "core/cuda/cuda_device.h"
#include "core/cuda/cuda_runtime.h"
#include "core/error.h"

namespace tz {
namespace {

// The NCCL type a reduction runs in; uint16 has none (it is not arithmetic data in tierzero).
ncclDataType_t reduce_type(DType dtype, Collective kind) {
  switch (dtype) {
    case DType::f32:
      return ncclFloat32;
    case DType::bf16:
      return ncclBfloat16;
    case DType::f16:
      return ncclFloat16;
    case DType::i32:
      return ncclInt32;
    case DType::f64:
      return ncclFloat64;
    case DType::u16:
      break;
  }
  TZ_FAIL(collective_name(kind), " of ", dtype_name(dtype),
          " is not supported by the NCCL communicator (no reduction on uint16; all_gather and broadcast move "
          "it as bytes)");
}

// How a collective that only moves data (all_gather, broadcast) sends `count` elements: in their own
// type, or uint16 as twice as many bytes.
std::pair<ncclDataType_t, std::size_t> move_type(DType dtype, std::size_t count, Collective kind) {
  if (dtype == DType::u16) return {ncclUint8, 2 * count};
  return {reduce_type(dtype, kind), count};
}

ncclRedOp_t nccl_op(ReduceOp op) { return op == ReduceOp::max ? ncclMax : ncclSum; }

// A non-blocking ncclComm: its calls return at once (ncclInProgress while it works), so init and every
// enqueue can be given a deadline and the communicator aborted from another thread.
NcclCommHandle init_comm(Communicator& bootstrap, int gpu) {
  const int rank = bootstrap.rank(), size = bootstrap.size();
  // Every rank learns whether every rank could take its GPU before anyone waits in NCCL's init.
  std::string mine;
  int count = cuda::device_count();
  if (gpu < 0 || gpu >= count)
    mine = detail::concat("GPU ", gpu, " is not one of the ", count, " this rank sees (",
                          count ? std::string("see CUDA_VISIBLE_DEVICES") : cuda::unavailable_reason(), ")");
  else if (const cudaError_t rc = cudaSetDevice(gpu); rc != cudaSuccess)
    mine = detail::concat("cudaSetDevice(", gpu, ") failed: ", cudaGetErrorString(rc));
  std::int32_t bad = mine.empty() ? 0 : 1;
  bootstrap.all_reduce(&bad, 1, DType::i32, ReduceOp::max)->wait();
  TZ_CHECK(mine.empty(), "cannot join the NCCL world of ", bootstrap.name(), ": ", mine);
  TZ_CHECK(bad == 0, "cannot join the NCCL world of ", bootstrap.name(),
           ": another rank cannot use its GPU (look for its error)");

  // Rank 0's id, with whether it could make one, broadcast as 16-bit words (the bootstrap's broadcast
  // takes host buffers of a DType).
  struct Id {
    ncclUniqueId id;
    std::int32_t ok;
    std::int32_t pad;
  } msg{};
  static_assert(sizeof(Id) % 2 == 0);
  std::string id_error;
  if (rank == 0) {
    const ncclResult_t rc = ncclGetUniqueId(&msg.id);
    msg.ok = rc == ncclSuccess ? 1 : 0;
    if (rc != ncclSuccess) id_error = ncclGetErrorString(rc);
  }
  bootstrap.broadcast(&msg, sizeof(Id) / 2, DType::u16, 0)->wait();
  TZ_CHECK(msg.ok == 1, "rank 0 could not create the NCCL unique id", id_error.empty() ? "" : ": " + id_error,
           " (NCCL could not find a network interface?)");

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t raw = nullptr;
  ncclResult_t rc = ncclCommInitRankConfig(&raw, size, msg.id, rank, &config);
  NcclCommHandle comm(raw);  // aborted on every way out below but the last
  const auto limit = bootstrap.timeout();
  const auto deadline = NcclClock::now() + limit;
  while (rc == ncclInProgress) {
    if (NcclClock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ncclResult_t state = ncclSuccess;
    rc = ncclCommGetAsyncError(comm.get(), &state);
    if (rc == ncclSuccess) rc = state;
  }
  if (rc != ncclSuccess) {
    const char* last = ncclGetLastError(nullptr);
    const std::string why = rc == ncclInProgress
                                ? detail::concat("did not complete within ", limit.count(),
                                                 " ms: a rank did not join (look for its error)")
                                : detail::concat("failed: ", ncclGetErrorString(rc), " ", last ? last : "");
    TZ_FAIL("NCCL initialisation of rank ", rank, " of ", size, " on GPU ", gpu, " ", why,
            ". Two ranks on one GPU (more local ranks than GPUs) is a common cause.");
  }
  int ranks = 0, device = -1;
  TZ_NCCL_CHECK(ncclCommCount(comm.get(), &ranks));
  TZ_NCCL_CHECK(ncclCommCuDevice(comm.get(), &device));
  TZ_CHECK(ranks == size && device == gpu, "the NCCL communicator has ", ranks, " ranks on GPU ", device,
           ", not ", size, " on GPU ", gpu);
  return comm;
}

}  // namespace

int local_gpu(const WorldInfo& world, int gpu_count) {
  TZ_CHECK(gpu_count > 0, "no GPU to run rank ", world.rank, " on (", gpu_count, " visible)");
  return world.local_rank % gpu_count;
}

struct NcclCommunicator::Launch {
  Collective kind = Collective::barrier;
  std::size_t count = 0;
  DType dtype = DType::f32;
  int root = 0;
  double elements_sent = 0;
  // The NCCL call on the comm stream; empty when there is nothing to move (count 0).
  std::function<ncclResult_t(ncclComm_t, cudaStream_t)> call;
};

// A collective of an open group: its op (Work handed out, not yet watched) and its NCCL call.
struct NcclCommunicator::Grouped {
  std::shared_ptr<NcclOp> op;
  std::function<ncclResult_t(ncclComm_t, cudaStream_t)> call;
};

NcclCommunicator::NcclCommunicator(Communicator& bootstrap, int gpu, Allocator& device_memory)
    : bootstrap_(bootstrap), gpu_(gpu), rank_(bootstrap.rank()), size_(bootstrap.size()) {
  NcclCommHandle comm = init_comm(bootstrap, gpu);  // also makes `gpu` current for the members below
  set_timeout(bootstrap.timeout());
  stream_ = std::make_unique<cuda::CudaStream>();
  producer_done_ = std::make_unique<cuda::CudaEvent>();
  barrier_buf_ = Buffer<std::int32_t>(device_memory, 1, "NCCL barrier");
  TZ_CUDA_CHECK(cudaMemsetAsync(barrier_buf_.data(), 0, sizeof(std::int32_t), stream_->get()));
  watchdog_ = std::make_unique<NcclWatchdog>(comm.get(), gpu, name(), stats_,
                                             [this](int code) { bootstrap_.abort(code); });
  comm.release();  // the watchdog owns it now
}

NcclCommunicator::~NcclCommunicator() {
  // At most 30 s for the last collectives to flush: the job is ending, and a dead peer must not hold it.
  // The barrier buffer goes after it (a member), once no collective can use it.
  if (watchdog_) watchdog_->close(std::min(timeout(), std::chrono::milliseconds(30'000)));
  watchdog_.reset();
}

std::string NcclCommunicator::name() const {
  return detail::concat("NCCL world (", size_, " ranks, GPU ", gpu_, ")");
}

void NcclCommunicator::make_current() const {
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current != gpu_) TZ_CUDA_CHECK(cudaSetDevice(gpu_));
}

std::unique_ptr<Work> NcclCommunicator::launch(const Launch& l) {
  make_current();
  std::lock_guard<std::mutex> issue(issue_mu_);
  watchdog_->throw_if_failed();
  std::shared_ptr<NcclOp> op = watchdog_->new_op();
  op->kind = l.kind;
  op->count = l.count;
  op->dtype = l.dtype;
  op->root = l.root;
  op->seq = ++seq_;
  op->called = NcclClock::now();
  op->timeout = timeout();
  const cudaStream_t s = stream_->get();
  if (Stream* producer = producer_.load(std::memory_order_acquire)) {
    // The collective reads what the producer stream wrote up to now: the comm stream waits for it on
    // the device instead of the host synchronising.
    producer_done_->record(*producer);
    producer_done_->wait(*stream_);
  }
  TZ_CUDA_CHECK(cudaEventRecord(op->start, s));
  stats_.add_call(l.kind, l.elements_sent, l.elements_sent * double(dtype_size(l.dtype)));
  if (group_open_) {  // NCCL gets it at group_end()
    op->launched.store(false, std::memory_order_release);
    group_.push_back({op, l.call});
    return watchdog_->make_work(std::move(op));
  }
  if (l.call) watchdog_->enqueue(*op, [&](ncclComm_t comm) { return l.call(comm, s); });
  TZ_CUDA_CHECK(cudaEventRecord(op->end, s));
  return watchdog_->track(std::move(op));
}

void NcclCommunicator::group_start() {
  std::lock_guard<std::mutex> issue(issue_mu_);
  TZ_CHECK(!group_open_, "a collective group was started on ", name(),
           " while another is open (groups do not nest); this is a bug, please report it");
  group_open_ = true;
}

void NcclCommunicator::group_end() {
  make_current();
  std::lock_guard<std::mutex> issue(issue_mu_);
  TZ_CHECK(group_open_, "group_end() on ", name(), " without group_start(); this is a bug, please report it");
  group_open_ = false;
  std::vector<Grouped> ops = std::move(group_);
  group_.clear();
  if (ops.empty()) return;
  // Whatever happens below, every op of the group becomes an ordinary one: waited on, it completes, or
  // (the communicator having failed) throws the failure.
  auto release = [&] {
    for (Grouped& g : ops) {
      g.op->launched.store(true, std::memory_order_release);
      watchdog_->watch(g.op);
    }
  };
  const cudaStream_t s = stream_->get();
  try {
    watchdog_->enqueue(*ops.front().op, [&](ncclComm_t comm) {
      ncclResult_t rc = ncclGroupStart();
      if (rc != ncclSuccess) return rc;
      for (Grouped& g : ops) {
        if (!g.call) continue;
        const ncclResult_t r = g.call(comm, s);
        if (r != ncclSuccess && r != ncclInProgress) {
          rc = r;
          break;
        }
      }
      const ncclResult_t end = ncclGroupEnd();  // always: the thread's group must be closed
      return rc != ncclSuccess ? rc : end;
    });
    for (Grouped& g : ops) TZ_CUDA_CHECK(cudaEventRecord(g.op->end, s));
  } catch (const std::exception& e) {
    // Ops without an end event must not be watched on a communicator that still works.
    if (!watchdog_->failed()) watchdog_->abort(e.what());
    release();
    throw;
  }
  release();
}

std::unique_ptr<Work> NcclCommunicator::reduce_scatter(const void* send, void* recv, std::size_t count,
                                                       DType dtype, ReduceOp op) {
  const ncclDataType_t type = reduce_type(dtype, Collective::reduce_scatter);
  // In place is NCCL's own convention (recv == send + rank * count): both cases are one call.
  reduce_scatter_buffers(send, recv, count, dtype, rank_, size_);
  Launch l{Collective::reduce_scatter,
           count,
           dtype,
           0,
           bus_elements_sent(Collective::reduce_scatter, count, rank_, size_),
           {}};
  if (count > 0)
    l.call = [=](ncclComm_t c, cudaStream_t s) {
      return ncclReduceScatter(send, recv, count, type, nccl_op(op), c, s);
    };
  return launch(l);
}

std::unique_ptr<Work> NcclCommunicator::all_gather(const void* send, void* recv, std::size_t count,
                                                   DType dtype) {
  const auto [type, n] = move_type(dtype, count, Collective::all_gather);
  all_gather_buffers(send, recv, count, dtype, rank_, size_);  // in place: send == recv + rank * count
  Launch l{Collective::all_gather,
           count,
           dtype,
           0,
           bus_elements_sent(Collective::all_gather, count, rank_, size_),
           {}};
  if (count > 0)
    l.call = [=, type = type, n = n](ncclComm_t c, cudaStream_t s) {
      return ncclAllGather(send, recv, n, type, c, s);
    };
  return launch(l);
}

std::unique_ptr<Work> NcclCommunicator::all_reduce(void* buf, std::size_t count, DType dtype, ReduceOp op) {
  const ncclDataType_t type = reduce_type(dtype, Collective::all_reduce);
  TZ_CHECK(count == 0 || buf, "all_reduce needs a buffer");
  Launch l{Collective::all_reduce,
           count,
           dtype,
           0,
           bus_elements_sent(Collective::all_reduce, count, rank_, size_),
           {}};
  if (count > 0)
    l.call = [=](ncclComm_t c, cudaStream_t s) {
      return ncclAllReduce(buf, buf, count, type, nccl_op(op), c, s);
    };
  return launch(l);
}

std::unique_ptr<Work> NcclCommunicator::broadcast(void* buf, std::size_t count, DType dtype, int root) {
  TZ_CHECK(root >= 0 && root < size_, "broadcast root ", root, " is not a rank of ", name());
  TZ_CHECK(count == 0 || buf, "broadcast needs a buffer");
  const auto [type, n] = move_type(dtype, count, Collective::broadcast);
  Launch l{Collective::broadcast,
           count,
           dtype,
           root,
           bus_elements_sent(Collective::broadcast, count, rank_, size_, root),
           {}};
  if (count > 0)
    l.call = [=, type = type, n = n](ncclComm_t c, cudaStream_t s) {
      return ncclBroadcast(buf, buf, n, type, root, c, s);
    };
  return launch(l);
}

std::unique_ptr<Work> NcclCommunicator::barrier() {
  Launch l{Collective::barrier, 0, DType::f32, 0, 0.0, {}};
  std::int32_t* buf = barrier_buf_.data();
  l.call = [buf](ncclComm_t c, cudaStream_t s) {
    return ncclAllReduce(buf, buf, 1, ncclInt32, ncclSum, c, s);
  };
  return launch(l);
}

void NcclCommunicator::abort(int code) noexcept {
  if (watchdog_) watchdog_->abort(detail::concat(name(), " was aborted (exit code ", code, ")"));
  bootstrap_.abort(code);
}

std::unique_ptr<Communicator> make_nccl_world(Communicator& bootstrap, Device& dev) {
  return std::make_unique<NcclCommunicator>(bootstrap, cuda::cuda_device_index(dev),
                                            dev.allocator(MemoryKind::device));
}

}  // namespace tz
