// The CUDA backend's reductions into one double: sums and sums of squares over host_ops.cc's fixed
// chunks (one block per chunk, a fixed tree inside it, then the chunk sums added in chunk order by one
// thread), the in-order sum of a double array, and the finiteness check. No atomics: the same inputs
// give the same bits on every run, whatever the timing.
#include <cstdint>

#include "core/cuda/block_reduce.cuh"
#include "core/cuda/cuda_runtime.h"
#include "core/cuda/kernels.h"
#include "core/cuda/launch_config.h"

namespace tz::cuda {
namespace {

constexpr std::size_t kChunk = kSumChunk;
constexpr unsigned kRoundChunks = kSumRoundChunks;
constexpr int kChunkThreads = 256;  // 256 elements a thread per chunk

// Chunk sums of one round and the running total of the rounds before it. Static device memory, allocated once
// per device when the module loads, so no call allocates. It is shared by every stream of the device: two
// reductions must not run at the same time on two streams of one device (the backend enqueues them on one
// stream per device).
__device__ double g_chunk_sums[kRoundChunks];
__device__ double g_running;

enum class Term { value, square };

template <Term kTerm>
__global__ void chunk_sums_kernel(const float* x, std::size_t n, std::size_t first_chunk) {
  __shared__ double buf[32];
  const std::size_t begin = (first_chunk + blockIdx.x) * kChunk;
  const std::size_t end = n - begin < kChunk ? n : begin + kChunk;
  double t = 0;
  for (std::size_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const double v = x[i];
    t += kTerm == Term::square ? v * v : v;
  }
  t = block_sum(t, buf);
  if (threadIdx.x == 0) g_chunk_sums[blockIdx.x] = t;
}

// Where a round stands among the rounds of one sum.
enum class Round : unsigned char { only, first, middle, last };

// One thread: the round's chunk sums in chunk order onto the running total (0 in the first round); the
// last round adds the total to acc[0] (acc[0] += 0 when there was nothing to sum, as on the CPU).
__global__ void add_chunk_sums_kernel(double* acc, unsigned count, Round round) {
  double t = round == Round::only || round == Round::first ? 0.0 : g_running;
  for (unsigned c = 0; c < count; ++c) t += g_chunk_sums[c];
  if (round == Round::only || round == Round::last)
    acc[0] += t;
  else
    g_running = t;
}

template <Term kTerm>
void chunked_sum(cudaStream_t s, double* acc, const float* x, std::size_t n) {
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
  std::size_t first = 0;
  do {
    const unsigned count = unsigned(chunks - first < kRoundChunks ? chunks - first : kRoundChunks);
    if (count) {
      chunk_sums_kernel<kTerm><<<count, kChunkThreads, 0, s>>>(x, n, first);
      TZ_CUDA_CHECK(cudaGetLastError());
    }
    const bool first_round = first == 0, last_round = first + count >= chunks;
    const Round round =
        first_round ? (last_round ? Round::only : Round::first) : (last_round ? Round::last : Round::middle);
    add_chunk_sums_kernel<<<1, 1, 0, s>>>(acc, count, round);
    TZ_CUDA_CHECK(cudaGetLastError());
    first += count;
  } while (first < chunks);
}

// acc[0] += x[0] + x[1] + ... in that order (the per-group partials: a handful of values).
__global__ void sum_doubles_kernel(double* acc, const double* x, std::size_t n) {
  double t = acc[0];
  for (std::size_t i = 0; i < n; ++i) t += x[i];
  acc[0] = t;
}

// Any Inf or NaN (exponent bits all ones) makes acc[0] NaN. Every writer stores the same value, so the
// result does not depend on which block writes first.
__global__ void check_finite_kernel(double* acc, const float* x, std::size_t n) {
  int bad = 0;
  for (std::size_t i = first_index(); i < n; i += grid_stride())
    bad |= (float_bits(x[i]) & 0x7f800000u) == 0x7f800000u;
  if (__syncthreads_or(bad) && threadIdx.x == 0) acc[0] = __longlong_as_double(0x7ff8000000000000LL);
}

}  // namespace

void sum(cudaStream_t s, double* acc, const float* x, std::size_t n) {
  chunked_sum<Term::value>(s, acc, x, n);
}

void sum_squares(cudaStream_t s, double* acc, const float* x, std::size_t n) {
  chunked_sum<Term::square>(s, acc, x, n);
}

void sum(cudaStream_t s, double* acc, const double* x, std::size_t n) {
  sum_doubles_kernel<<<1, 1, 0, s>>>(acc, x, n);
  TZ_CUDA_CHECK(cudaGetLastError());
}

void check_finite(cudaStream_t s, double* acc, const float* x, std::size_t n) {
  if (n == 0) return;
  check_finite_kernel<<<grid_blocks(n), kThreads, 0, s>>>(acc, x, n);
  TZ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tz::cuda
