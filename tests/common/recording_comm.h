// A communicator for tests that drive one component directly: a world of `size` ranks seen from rank
// `rank`, in one process. The other ranks are taken to hold exactly what this rank holds (mirrors), so
// a sum over ranks is `size` times this rank's values, a max is this rank's values, an all-gather puts
// this rank's block in every rank's place, and a broadcast leaves the buffer as it is. Every call is
// recorded (kind, count, dtype, op, buffers) and completes at once; device memory is opened for the
// copy as a collective may (the poisoned build).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/error.h"
#include "core/poison.h"

namespace tz::testing {

class RecordingComm final : public Communicator {
 public:
  struct Call {
    Collective kind;
    std::size_t count;
    DType dtype;
    ReduceOp op;
    const void* send;
    void* recv;
  };

  RecordingComm(int size, int rank) : size_(size), rank_(rank) {
    TZ_CHECK(size >= 1 && rank >= 0 && rank < size, "RecordingComm: rank ", rank, " of ", size);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "recording (" + std::to_string(size_) + " ranks)"; }

  std::unique_ptr<Work> reduce_scatter(const void* send, void* recv, std::size_t count, DType dt,
                                       ReduceOp op) override {
    calls.push_back({Collective::reduce_scatter, count, dt, op, send, recv});
    const auto* mine = static_cast<const std::byte*>(send) + std::size_t(rank_) * count * dtype_size(dt);
    DeviceAccess open{send, recv};
    std::memmove(recv, mine, count * dtype_size(dt));
    if (op == ReduceOp::sum) scale(recv, count, dt);
    return done();
  }
  std::unique_ptr<Work> all_gather(const void* send, void* recv, std::size_t count, DType dt) override {
    calls.push_back({Collective::all_gather, count, dt, ReduceOp::sum, send, recv});
    const std::size_t n = count * dtype_size(dt);
    DeviceAccess open{send, recv};
    auto* out = static_cast<std::byte*>(recv);
    std::memmove(out + std::size_t(rank_) * n, send, n);  // in place: send is this block already
    for (int r = 0; r < size_; ++r)
      if (r != rank_) std::memcpy(out + std::size_t(r) * n, out + std::size_t(rank_) * n, n);
    return done();
  }
  std::unique_ptr<Work> all_reduce(void* buf, std::size_t count, DType dt, ReduceOp op) override {
    calls.push_back({Collective::all_reduce, count, dt, op, buf, buf});
    DeviceAccess open{buf};
    if (op == ReduceOp::sum) scale(buf, count, dt);
    return done();
  }
  std::unique_ptr<Work> broadcast(void* buf, std::size_t count, DType dt, int root) override {
    TZ_CHECK(root >= 0 && root < size_, "broadcast root ", root, " outside a world of ", size_);
    calls.push_back({Collective::broadcast, count, dt, ReduceOp::sum, buf, buf});
    return done();
  }
  std::unique_ptr<Work> barrier() override {
    calls.push_back({Collective::barrier, 0, DType::i32, ReduceOp::sum, nullptr, nullptr});
    return done();
  }
  void abort(int code) noexcept override { std::_Exit(code); }

  // The recorded calls of one kind, in call order.
  std::vector<Call> of(Collective kind) const {
    std::vector<Call> v;
    for (const Call& c : calls)
      if (c.kind == kind) v.push_back(c);
    return v;
  }

  std::vector<Call> calls;

 private:
  class DoneWork final : public Work {
   public:
    bool done() override { return true; }
    void wait() override {}
    void wait(Stream&) override {}
  };
  static std::unique_ptr<Work> done() { return std::make_unique<DoneWork>(); }

  // The sum over `size_` mirrors: exact for powers of two in floating point.
  void scale(void* p, std::size_t count, DType dt) const {
    switch (dt) {
      case DType::f32:
        for (std::size_t i = 0; i < count; ++i) static_cast<float*>(p)[i] *= float(size_);
        return;
      case DType::f64:
        for (std::size_t i = 0; i < count; ++i) static_cast<double*>(p)[i] *= double(size_);
        return;
      case DType::i32:
        for (std::size_t i = 0; i < count; ++i) static_cast<std::int32_t*>(p)[i] *= size_;
        return;
      default:
        TZ_FAIL("RecordingComm sums only fp32, fp64 and int32, not ", dtype_name(dt));
    }
  }

  int size_, rank_;
};

}  // namespace tz::testing
