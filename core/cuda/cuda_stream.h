// The CUDA device's streams and events (RAII over cudaStream_t / cudaEvent_t), and the way CUDA code
// (the backend, the NCCL communicator) reaches the handle behind a tz::Stream or tz::Event. Include
// only from code in CUDA targets.
#pragma once

#include <cuda_runtime.h>

#include "core/cuda/cuda_runtime.h"
#include "core/stream.h"

namespace tz::cuda {

// A non-blocking stream (it does not synchronise with the legacy default stream).
class CudaStream final : public Stream {
 public:
  CudaStream() { TZ_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~CudaStream() override {
    if (s_) cudaStreamDestroy(s_);
  }
  void synchronize() override { TZ_CUDA_CHECK(cudaStreamSynchronize(s_)); }
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// Timing disabled by default: events only order work (the cheapest kind to record and wait on); a timing
// event also records when the GPU reached it (ms_since: cudaEventElapsedTime, ~0.5 us resolution).
class CudaEvent final : public Event {
 public:
  enum class Timing { off, on };
  explicit CudaEvent(Timing t = Timing::off) : timing_(t == Timing::on) {
    TZ_CUDA_CHECK(cudaEventCreateWithFlags(&e_, timing_ ? cudaEventDefault : cudaEventDisableTiming));
  }
  ~CudaEvent() override {
    if (e_) cudaEventDestroy(e_);
  }
  void record(Stream& stream) override;
  void wait(Stream& stream) override;
  void synchronize() override { TZ_CUDA_CHECK(cudaEventSynchronize(e_)); }
  bool ready() override;
  double ms_since(Event& start) override;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
  bool timing_ = false;
};

// The handle behind a stream of the CUDA device; throws tz::Error (naming the mistake) when `s` is
// another device's stream.
cudaStream_t stream_of(Stream& s);

}  // namespace tz::cuda
