// A device whose streams run nothing as it is enqueued, as a GPU's: copies and fills wait in per-stream
// queues until drain(), which runs them in a random order that keeps each stream's own order and every
// event wait, and nothing else. Code that orders its streams by events gives the same bytes under every
// seed; a missing wait shows as wrong bytes under some. Memory comes from a cpu device (poisoned device
// memory included); only copy_async and memset_async exist, the kernels throw.
#pragma once

#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/device.h"
#include "core/error.h"
#include "core/poison.h"

namespace tz::test {

class DeferredDevice;

namespace deferred_detail {

struct Queue;
// One operation of a stream: work to run, or a wait until `on` has run its first `until` operations.
struct Op {
  std::function<void()> run;
  const Queue* on = nullptr;
  std::size_t until = 0;
};
struct Queue {
  std::vector<Op> ops;
  std::size_t done = 0;  // ops run so far, in order
};

struct Scheduler {
  explicit Scheduler(unsigned seed) : rng(seed) {}
  std::vector<std::unique_ptr<Queue>> queues;
  std::mt19937 rng;
  std::size_t ran = 0;

  // Runs every queued operation, each time at the head of a stream picked at random among those whose
  // head may run.
  void drain() {
    for (;;) {
      std::vector<Queue*> ready;
      bool left = false;
      for (auto& q : queues) {
        if (q->done == q->ops.size()) continue;
        left = true;
        const Op& op = q->ops[q->done];
        if (!op.on || op.on->done >= op.until) ready.push_back(q.get());
      }
      if (!left) return;
      TZ_CHECK(!ready.empty(), "the deferred streams wait on each other in a cycle: a deadlock on a GPU");
      Queue* q = ready[rng() % ready.size()];
      if (q->ops[q->done].run) q->ops[q->done].run();
      ++q->done;
      ++ran;
    }
  }
};

class DeferredStream final : public Stream {
 public:
  DeferredStream(Scheduler& s, Queue& q) : sched_(s), q_(q) {}
  void synchronize() override { sched_.drain(); }
  Queue& queue() { return q_; }

 private:
  Scheduler& sched_;
  Queue& q_;
};

inline Queue& queue_of(Stream& s) {
  auto* d = dynamic_cast<DeferredStream*>(&s);
  TZ_CHECK(d, "a stream of another device was given to the deferred device");
  return d->queue();
}

class DeferredEvent final : public Event {
 public:
  explicit DeferredEvent(Scheduler& s) : sched_(s) {}
  void record(Stream& s) override {
    q_ = &queue_of(s);
    at_ = q_->ops.size();
  }
  // As cudaStreamWaitEvent: the record current at the call; an event never recorded is complete.
  void wait(Stream& s) override {
    if (q_) queue_of(s).ops.push_back({{}, q_, at_});
  }
  void synchronize() override { sched_.drain(); }
  bool ready() override { return !q_ || q_->done >= at_; }

 private:
  Scheduler& sched_;
  const Queue* q_ = nullptr;
  std::size_t at_ = 0;
};

class DeferredBackend final : public Backend {
 public:
  void copy_async(Stream& s, void* dst, const void* src, std::size_t bytes) override {
    queue_of(s).ops.push_back({[=] {
      DeviceAccess open{dst, src};
      std::memcpy(dst, src, bytes);
    }});
  }
  void memset_async(Stream& s, void* dst, int value, std::size_t bytes) override {
    queue_of(s).ops.push_back({[=] {
      DeviceAccess open{dst};
      std::memset(dst, value, bytes);
    }});
  }

  // No kernels: the deferred device tests the order of copies, not arithmetic.
  void gemm(Stream&, Trans, Trans, int, int, int, CView, CView, View, Accumulate) override { none("gemm"); }
  void set_gemm_workspace(float*, std::size_t) override {}
  void add_bias(Stream&, View, CView, int, int) override { none("add_bias"); }
  void bias_backward(Stream&, float*, CView, int, int) override { none("bias_backward"); }
  void encoder_forward(Stream&, View, const std::int32_t*, CView, CView, int, int, int) override {
    none("encoder_forward");
  }
  void encoder_backward(Stream&, float*, float*, CView, const std::int32_t*, int, int, int) override {
    none("encoder_backward");
  }
  void layernorm_forward(Stream&, View, float*, float*, CView, CView, CView, int, int) override {
    none("layernorm_forward");
  }
  void layernorm_backward(Stream&, View, float*, float*, CView, CView, CView, const float*, const float*, int,
                          int) override {
    none("layernorm_backward");
  }
  void gelu_forward(Stream&, View, CView, std::size_t) override { none("gelu_forward"); }
  void gelu_backward(Stream&, View, CView, CView, std::size_t) override { none("gelu_backward"); }
  void attention_forward(Stream&, View, float*, float*, CView, const AttentionShape&) override {
    none("attention_forward");
  }
  void attention_backward(Stream&, View, float*, CView, CView, CView, const float*, const AttentionShape&) override {
    none("attention_backward");
  }
  void rmsnorm_forward(Stream&, View, float*, CView, CView, int, int, float) override { none("rmsnorm_forward"); }
  void rmsnorm_backward(Stream&, View, float*, CView, CView, CView, const float*, int, int) override {
    none("rmsnorm_backward");
  }
  void rope(Stream&, View, const float*, int, int, int, int, int, bool) override { none("rope"); }
  void swiglu_forward(Stream&, View, CView, int, int) override { none("swiglu_forward"); }
  void swiglu_backward(Stream&, View, CView, CView, int, int) override { none("swiglu_backward"); }
  void add(Stream&, View, CView, CView, std::size_t) override { none("add"); }
  void axpy(Stream&, float*, float, const float*, std::size_t) override { none("axpy"); }
  void softmax_xent(Stream&, float*, View, const std::int32_t*, int, int, int, float) override {
    none("softmax_xent");
  }
  void cast(Stream&, void*, DType, const void*, DType, std::size_t) override { none("cast"); }
  void fill(Stream&, View, float, std::size_t) override { none("fill"); }
  void sum(Stream&, double*, const float*, std::size_t) override { none("sum"); }
  void sum(Stream&, double*, const double*, std::size_t) override { none("sum"); }
  void sum_squares(Stream&, double*, const float*, std::size_t) override { none("sum_squares"); }
  void check_finite(Stream&, double*, const float*, std::size_t) override { none("check_finite"); }
  void adamw(Stream&, float*, float*, float*, const float*, std::size_t, const AdamStep&, void*,
             DType) override {
    none("adamw");
  }
  void adamw_compressed(Stream&, const AdamStep&, const CompressedStates&, const float*, std::size_t,
                        const ShardPosition&) override {
    none("adamw_compressed");
  }

 private:
  [[noreturn]] static void none(const char* what) {
    TZ_FAIL("the deferred device has no ", what, " kernel: it runs copies and fills only");
  }
};

}  // namespace deferred_detail

class DeferredDevice final : public Device {
 public:
  explicit DeferredDevice(unsigned seed)
      : Device(DeviceKind::cpu, std::make_unique<deferred_detail::DeferredBackend>()), sched_(seed) {}
  Allocator& allocator(MemoryKind k) override { return memory_->allocator(k); }
  std::unique_ptr<Stream> create_stream() override {
    sched_.queues.push_back(std::make_unique<deferred_detail::Queue>());
    return std::make_unique<deferred_detail::DeferredStream>(sched_, *sched_.queues.back());
  }
  std::unique_ptr<Event> create_event() override {
    return std::make_unique<deferred_detail::DeferredEvent>(sched_);
  }
  std::string pin_error() const override { return ""; }

  // Runs everything enqueued so far (in a random order the events allow).
  void drain() { sched_.drain(); }
  // Operations run so far, waits included.
  std::size_t ran() const { return sched_.ran; }

 private:
  std::unique_ptr<Device> memory_ = make_cpu_device();
  deferred_detail::Scheduler sched_;
};

}  // namespace tz::test
