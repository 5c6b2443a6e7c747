// The one-rank communicator: collectives over a world of one are copies, so single-process runs and
// in-process tests need no MPI.
#include <cstdlib>
#include <cstring>

#include "comm/communicator.h"
#include "core/error.h"
#include "core/poison.h"

namespace tz {
namespace {

class DoneWork final : public Work {
 public:
  bool done() override { return true; }
  void wait() override {}
  void wait(Stream&) override {}
};

class SelfComm final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return "self (1 rank)"; }

  std::unique_ptr<Work> reduce_scatter(const void* send, void* recv, std::size_t count, DType dt,
                                       ReduceOp) override {
    // In place (recv == send + 0 * count) the result is already where it belongs.
    if (reduce_scatter_buffers(send, recv, count, dt, 0, 1) == BufferUse::separate)
      copy(send, recv, count, dt);
    return done(Collective::reduce_scatter);
  }
  std::unique_ptr<Work> all_gather(const void* send, void* recv, std::size_t count, DType dt) override {
    if (all_gather_buffers(send, recv, count, dt, 0, 1) == BufferUse::separate) copy(send, recv, count, dt);
    return done(Collective::all_gather);
  }
  std::unique_ptr<Work> all_reduce(void*, std::size_t, DType, ReduceOp) override {
    return done(Collective::all_reduce);
  }
  std::unique_ptr<Work> broadcast(void*, std::size_t, DType, int root) override {
    TZ_CHECK(root == 0, "broadcast root ", root, " outside a world of 1");
    return done(Collective::broadcast);
  }
  std::unique_ptr<Work> barrier() override { return done(Collective::barrier); }
  void abort(int code) noexcept override { std::_Exit(code); }

 private:
  static void copy(const void* send, void* recv, std::size_t count, DType dt) {
    if (count == 0) return;
    DeviceAccess open{send, recv};  // device memory: a collective may touch it (poisoned build)
    std::memcpy(recv, send, count * dtype_size(dt));
  }
  std::unique_ptr<Work> done(Collective c) {
    stats_.add_call(c, 0.0, 0.0);  // a world of one sends nothing: (N-1)/N of any message is 0
    return std::make_unique<DoneWork>();
  }
};

}  // namespace

std::unique_ptr<Communicator> make_self_comm() { return std::make_unique<SelfComm>(); }

}  // namespace tz
