// Deterministic benchmark inputs: uniform values from an index (splitmix64's finaliser), and device
// buffers filled with them through the backend, so a checker on the host knows every input element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/device.h"

namespace tz::bench {

// Uniform in [-1, 1) from the index and a seed.
inline float hashed_uniform(std::uint64_t i, std::uint64_t seed) {
  std::uint64_t z = i * 0x9e3779b97f4a7c15ull + seed;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return float(double(z >> 40) * (2.0 / 16777216.0) - 1.0);
}

// A repeating pattern of kTile fp32 values: element i of a filled buffer is tile[i % kTile], rounded
// to the buffer's dtype. Filling through a device-side tile costs one cast per kTile elements, not a
// host-generated copy of every element (the LM head's inputs are ~400M elements).
class InputTile {
 public:
  static constexpr std::size_t kTile = std::size_t(1) << 20;
  InputTile(Device& dev, Stream& s, std::uint64_t seed);
  // Fills `n` elements of `dtype` (f32, bf16 or f16) at device pointer `dst`, in stream order.
  void fill(Stream& s, void* dst, DType dtype, std::size_t n);
  // Element i of a buffer filled with `dtype`, as the device holds it, widened to double.
  double value(std::size_t i, DType dtype) const;

 private:
  Device& dev_;
  std::vector<float> host_;
  Buffer<float> device_;
};

}  // namespace tz::bench
