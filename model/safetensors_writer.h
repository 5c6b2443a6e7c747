// write_safetensors: a safetensors file from raw bytes, floats or a per-tensor fill, written atomically.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "model/safetensors_format.h"

namespace tz {

// One tensor to write: its values come from exactly one of `raw` (bytes already in `dtype`), `f32`
// (floats converted to `dtype`, which must then be F32, F16 or BF16, rounding to nearest even) or
// `fill` (called once, when the tensor is written, to produce its floats into a buffer of the tensor's
// size: a streaming writer holds one tensor at a time).
struct SafetensorsWriteTensor {
  std::string name;
  SafetensorsDType dtype = SafetensorsDType::F32;
  std::vector<std::int64_t> shape;
  const void* raw = nullptr;
  const float* f32 = nullptr;
  std::function<void(float* out)> fill;
};

// Writes tensors in sorted-name order, contiguous, the header padded with spaces to a multiple of 8
// bytes; through `path + ".tmp"` and a rename, so `path` is never left truncated.
void write_safetensors(const std::string& path, std::vector<SafetensorsWriteTensor> tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace tz
