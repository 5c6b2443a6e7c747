// InputTile: one tile of hashed values on the device, cast into buffers slice by slice.
#include "perf/bench_data.h"

#include <algorithm>

#include "core/backend.h"
#include "core/error.h"

namespace tz::bench {

InputTile::InputTile(Device& dev, Stream& s, std::uint64_t seed)
    : dev_(dev), host_(kTile), device_(dev, kTile, "benchmark input tile") {
  for (std::size_t i = 0; i < kTile; ++i) host_[i] = hashed_uniform(i, seed);
  dev.backend().copy_async(s, device_.data(), host_.data(), device_.bytes());
  // host_ stays alive and unchanged: the copy may still be reading it when this returns.
}

void InputTile::fill(Stream& s, void* dst, DType dtype, std::size_t n) {
  TZ_CHECK(dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16,
           "InputTile fills fp32, bf16 or fp16, not ", dtype_name(dtype));
  char* out = static_cast<char*>(dst);
  for (std::size_t off = 0; off < n; off += kTile) {
    const std::size_t len = std::min(kTile, n - off);
    dev_.backend().cast(s, out + off * dtype_size(dtype), dtype, device_.data(), DType::f32, len);
  }
}

double InputTile::value(std::size_t i, DType dtype) const {
  const float x = host_[i % kTile];
  if (dtype == DType::bf16) return bf16_to_float(float_to_bf16(x));
  if (dtype == DType::f16) return fp16_to_float(float_to_fp16(x));
  return x;
}

}  // namespace tz::bench
