// Safetensors reading with full header validation.
#include "model/safetensors_reader.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "model/json_bounded.h"

namespace tz {

// Safetensors stores little-endian data; we copy it straight into host memory.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

using json = nlohmann::json;
using namespace safetensors_detail;

SafetensorsReader::SafetensorsReader(const std::string& path) : file_(path, "safetensors file") {
  const std::uint64_t size = file_.size();
  TZ_CHECK(size >= 8, "safetensors file '", path, "' is too short (", size,
           " bytes) to hold the 8-byte header length; the file is truncated or not safetensors");
  unsigned char len[8];
  file_.read_at(len, 8, 0);
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= std::uint64_t(len[i]) << (8 * i);
  // The reference implementation's limit: a header is a few MB even for the largest models.
  TZ_CHECK(n <= kMaxSafetensorsHeader, "safetensors file '", path, "' declares a JSON header of ", n,
           " bytes, more than the 100000000 the safetensors format allows; the file is corrupt or not safetensors");
  TZ_CHECK(n <= size - 8, "safetensors file '", path, "' declares a JSON header of ", n, " bytes but only ",
           size - 8, " bytes follow the length field; the file is truncated or not safetensors");
  header_size_ = n;
  const std::uint64_t data_size = size - 8 - n;

  std::string text(n, '\0');
  file_.read_at(text.data(), n, 8);
  const json header = parse_json_bounded(text, "the JSON header of safetensors file '" + path + "'",
                                         "the file is corrupt or not safetensors");
  TZ_CHECK(header.is_object(), "safetensors file '", path, "' has a JSON header that is a ",
           header.type_name(), ", not an object of tensors; the file is corrupt or not safetensors");

  for (const auto& [key, val] : header.items()) {
    if (key == "__metadata__") {
      TZ_CHECK(val.is_object(), "safetensors file '", path,
               "': __metadata__ must be an object of strings, got a ", val.type_name());
      for (const auto& [mk, mv] : val.items()) {
        TZ_CHECK(mv.is_string(), "safetensors file '", path, "': __metadata__ entry '", mk,
                 "' must be a string, got a ", mv.type_name());
        metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + key + "' in safetensors file '" + path + "'";
    TZ_CHECK(val.is_object(), where, " is described by a ", val.type_name(),
             ", not an object with dtype, shape and data_offsets");
    SafetensorsTensor t;
    t.name = key;

    auto dt = val.find("dtype");
    TZ_CHECK(dt != val.end() && dt->is_string(), where, " has no dtype string");
    auto parsed = parse_safetensors_dtype(dt->get<std::string>());
    TZ_CHECK(parsed.has_value(), where, " has unknown dtype '", dt->get<std::string>(),
             "'; known: BOOL, U8, I8, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64, F8_E4M3, F8_E5M2");
    t.dtype = *parsed;

    auto sh = val.find("shape");
    TZ_CHECK(sh != val.end() && sh->is_array(), where, " has no shape array");
    for (const auto& d : *sh) {
      TZ_CHECK(d.is_number_integer() && d.get<std::int64_t>() >= 0, where, " has a shape entry ", d.dump(),
               " that is not a non-negative integer");
      t.shape.push_back(d.get<std::int64_t>());
    }

    auto off = val.find("data_offsets");
    TZ_CHECK(off != val.end() && off->is_array() && off->size() == 2 && (*off)[0].is_number_unsigned() &&
                 (*off)[1].is_number_unsigned(),
             where, " needs data_offsets as two non-negative integers [begin, end]");
    t.begin = (*off)[0].get<std::uint64_t>();
    t.end = (*off)[1].get<std::uint64_t>();
    TZ_CHECK(t.begin <= t.end, where, " has data_offsets [", t.begin, ", ", t.end, "] that run backwards");
    TZ_CHECK(t.end <= data_size, where, " has data_offsets [", t.begin, ", ", t.end,
             "] out of range: the data section holds only ", data_size,
             " bytes; the file is truncated or corrupt");
    auto need = shape_bytes(t.shape, t.dtype);
    TZ_CHECK(need.has_value(), where, " has a shape ", shape_str(t.shape), " too large to address");
    TZ_CHECK(t.nbytes() == *need, where, " has data_offsets [", t.begin, ", ", t.end, "] spanning ",
             t.nbytes(), " bytes, but shape ", shape_str(t.shape), " of ", safetensors_dtype_name(t.dtype),
             " needs ", *need, " bytes");
    tensors_.push_back(std::move(t));
  }

  // Overlap: walk the non-empty tensors in offset order. Empty tensors occupy no bytes.
  std::vector<const SafetensorsTensor*> by_offset;
  for (const auto& t : tensors_)
    if (t.nbytes() > 0) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    const auto *a = by_offset[i - 1], *b = by_offset[i];
    TZ_CHECK(b->begin >= a->end, "safetensors file '", path, "': tensors '", a->name, "' [", a->begin, ", ",
             a->end, ") and '", b->name, "' [", b->begin, ", ", b->end, ") overlap; the file is corrupt");
  }
  std::sort(tensors_.begin(), tensors_.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
}

const SafetensorsTensor* SafetensorsReader::find(const std::string& name) const {
  auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                             [](const SafetensorsTensor& t, const std::string& n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

void SafetensorsReader::read_raw(const SafetensorsTensor& t, void* dst) const {
  file_.read_at(dst, t.nbytes(), data_start() + t.begin);
}

std::string SafetensorsReader::header_bytes() const {
  std::string b(data_start(), '\0');
  file_.read_at(b.data(), b.size(), 0);
  return b;
}

void SafetensorsReader::read_f32(const SafetensorsTensor& t, float* dst, const SeenBytes& seen) const {
  TZ_CHECK(converts_to_float(t.dtype), "tensor '", t.name, "' in safetensors file '", path(), "' has dtype ",
           safetensors_dtype_name(t.dtype), "; only F32, F16 and BF16 convert to float");
  if (t.dtype == SafetensorsDType::F32) {
    read_raw(t, dst);
    if (seen) seen(dst, t.nbytes());
    return;
  }
  const std::size_t n = t.count();
  std::vector<std::uint16_t> stage(std::min(n, kChunkElems));
  for (std::size_t i = 0; i < n; i += stage.size()) {
    const std::size_t m = std::min(stage.size(), n - i);
    file_.read_at(stage.data(), m * 2, data_start() + t.begin + i * 2);
    if (seen) seen(stage.data(), m * 2);
    if (t.dtype == SafetensorsDType::BF16)
      for (std::size_t k = 0; k < m; ++k) dst[i + k] = bf16_to_float(bf16{stage[k]});
    else
      for (std::size_t k = 0; k < m; ++k) dst[i + k] = fp16_to_float(fp16{stage[k]});
  }
}

std::vector<float> SafetensorsReader::read_f32(const SafetensorsTensor& t) const {
  std::vector<float> out(t.count());
  read_f32(t, out.data());
  return out;
}

}  // namespace tz
