// The safetensors element types by name and size, and the helpers the reader and writer share.
#include "model/safetensors_format.h"

#include <array>
#include <sstream>

#include "core/error.h"

namespace tz {
namespace {

struct DTypeInfo {
  SafetensorsDType dtype;
  std::string_view name;
  std::size_t size;
};

constexpr std::array<DTypeInfo, 15> kDTypes{{
    {SafetensorsDType::BOOL, "BOOL", 1},
    {SafetensorsDType::U8, "U8", 1},
    {SafetensorsDType::I8, "I8", 1},
    {SafetensorsDType::I16, "I16", 2},
    {SafetensorsDType::U16, "U16", 2},
    {SafetensorsDType::F16, "F16", 2},
    {SafetensorsDType::BF16, "BF16", 2},
    {SafetensorsDType::I32, "I32", 4},
    {SafetensorsDType::U32, "U32", 4},
    {SafetensorsDType::F32, "F32", 4},
    {SafetensorsDType::F64, "F64", 8},
    {SafetensorsDType::I64, "I64", 8},
    {SafetensorsDType::U64, "U64", 8},
    {SafetensorsDType::F8_E4M3, "F8_E4M3", 1},
    {SafetensorsDType::F8_E5M2, "F8_E5M2", 1},
}};

}  // namespace

namespace safetensors_detail {

bool converts_to_float(SafetensorsDType t) {
  return t == SafetensorsDType::F32 || t == SafetensorsDType::F16 || t == SafetensorsDType::BF16;
}

std::string shape_str(const std::vector<std::int64_t>& s) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

// Bytes a tensor of this shape and dtype needs; nullopt on overflow.
std::optional<std::uint64_t> shape_bytes(const std::vector<std::int64_t>& shape, SafetensorsDType t) {
  std::uint64_t n = safetensors_dtype_size(t);
  for (auto d : shape)
    if (__builtin_mul_overflow(n, std::uint64_t(d), &n)) return std::nullopt;
  return n;
}

}  // namespace safetensors_detail

std::string_view safetensors_dtype_name(SafetensorsDType t) {
  for (const auto& d : kDTypes)
    if (d.dtype == t) return d.name;
  return "?";
}

std::size_t safetensors_dtype_size(SafetensorsDType t) {
  for (const auto& d : kDTypes)
    if (d.dtype == t) return d.size;
  return 0;
}

std::optional<SafetensorsDType> parse_safetensors_dtype(std::string_view name) {
  for (const auto& d : kDTypes)
    if (d.name == name) return d.dtype;
  return std::nullopt;
}

SafetensorsDType to_safetensors_dtype(DType t) {
  switch (t) {
    case DType::f32:
      return SafetensorsDType::F32;
    case DType::bf16:
      return SafetensorsDType::BF16;
    case DType::f16:
      return SafetensorsDType::F16;
    case DType::i32:
      return SafetensorsDType::I32;
    case DType::u16:
      return SafetensorsDType::U16;
    case DType::f64:
      break;
  }
  TZ_FAIL("no safetensors dtype for DType ", int(t));
}

std::size_t SafetensorsTensor::count() const {
  std::size_t n = 1;
  for (auto d : shape) n *= std::size_t(d);
  return n;
}

}  // namespace tz
