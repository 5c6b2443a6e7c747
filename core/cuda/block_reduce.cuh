// Deterministic warp and block sums: a fixed butterfly inside each warp, then the warps' sums in warp
// order, so a block of a given size always adds the same values in the same tree (no atomics).
#pragma once

#include <cuda_runtime.h>

namespace tz::cuda {

// Every lane ends with the same value: at each step the two partners add the same pair (a + b == b + a).
template <typename T>
__device__ inline T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum of v over a 1-D block whose size is a multiple of 32 (<= 1024); every thread gets the result.
// `buf` is 32 elements of shared memory; it may be reused by the next call (the leading barrier waits
// for the previous call's readers).
template <typename T>
__device__ inline T block_sum(T v, T* buf) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) buf[warp] = v;
  __syncthreads();
  T r = lane < nwarps ? buf[lane] : T(0);
  return warp_sum(r);
}

}  // namespace tz::cuda
