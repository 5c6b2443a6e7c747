// CudaEvent's stream operations and stream_of.
#include "core/cuda/cuda_stream.h"

namespace tz::cuda {

cudaStream_t stream_of(Stream& s) {
  auto* cs = dynamic_cast<CudaStream*>(&s);
  TZ_CHECK(cs != nullptr, "a CUDA kernel or copy was given a stream of another device (use the cuda device's streams)");
  return cs->get();
}

void CudaEvent::record(Stream& stream) { TZ_CUDA_CHECK(cudaEventRecord(e_, stream_of(stream))); }

void CudaEvent::wait(Stream& stream) { TZ_CUDA_CHECK(cudaStreamWaitEvent(stream_of(stream), e_, 0)); }

bool CudaEvent::ready() {
  const cudaError_t rc = cudaEventQuery(e_);
  if (rc == cudaErrorNotReady) return false;
  TZ_CUDA_CHECK(rc);
  return true;
}

double CudaEvent::ms_since(Event& start) {
  auto* s = dynamic_cast<CudaEvent*>(&start);
  TZ_CHECK(timing_ && s && s->timing_, "ms_since needs two timing events of a cuda device");
  float ms = 0;
  TZ_CUDA_CHECK(cudaEventElapsedTime(&ms, s->e_, e_));
  return double(ms);
}

}  // namespace tz::cuda
