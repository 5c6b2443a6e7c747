// The safetensors format: its element types, one tensor's entry in a file's header, and the limits and
// helpers the reader and the writer share (8-byte little-endian header length, JSON header, raw
// little-endian data).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"

namespace tz {

// Element types the safetensors format defines. Any of them can be read and written raw; only F32,
// F16 and BF16 convert to float.
enum class SafetensorsDType : std::uint8_t {
  BOOL,
  U8,
  I8,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  F64,
  I64,
  U64,
  F8_E4M3,
  F8_E5M2
};

std::string_view safetensors_dtype_name(SafetensorsDType t);  // "F32", "BF16", ...
std::size_t safetensors_dtype_size(SafetensorsDType t);       // bytes per element
std::optional<SafetensorsDType> parse_safetensors_dtype(std::string_view name);
// F32 <-> DType::f32, BF16 <-> bf16, F16 <-> f16; other DTypes throw.
SafetensorsDType to_safetensors_dtype(DType t);

struct SafetensorsTensor {
  std::string name;
  SafetensorsDType dtype = SafetensorsDType::F32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;  // byte offsets into the data section (after the header)

  std::size_t count() const;  // elements: product of shape (1 for a scalar)
  std::uint64_t nbytes() const { return end - begin; }
};

// Called with every run of bytes read from a file, as read (before any conversion): a caller's hash of
// what it loaded.
using SeenBytes = std::function<void(const void* bytes, std::size_t n)>;

// The largest JSON header read (the reference implementation's limit, 100 MB).
inline constexpr std::uint64_t kMaxSafetensorsHeader = 100'000'000;

namespace safetensors_detail {
// Conversion staging: big enough to amortise syscalls, small enough not to matter next to the model.
inline constexpr std::size_t kChunkElems = std::size_t(1) << 20;
bool converts_to_float(SafetensorsDType t);  // F32, F16 or BF16
std::string shape_str(const std::vector<std::int64_t>& s);  // "[2, 3]"
// Bytes a tensor of this shape and dtype needs; nullopt on overflow.
std::optional<std::uint64_t> shape_bytes(const std::vector<std::int64_t>& shape, SafetensorsDType t);
}  // namespace safetensors_detail

}  // namespace tz
