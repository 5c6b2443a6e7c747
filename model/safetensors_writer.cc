// Safetensors writing: the header in name order padded to 8 bytes, then the data, through an atomic file.
#include "model/safetensors_writer.h"

#include <algorithm>
#include <bit>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/file_io.h"

namespace tz {

static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

using json = nlohmann::json;
using namespace safetensors_detail;

void write_safetensors(const std::string& path, std::vector<SafetensorsWriteTensor> tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    const std::string where = "tensor '" + t.name + "' for safetensors file '" + path + "'";
    TZ_CHECK(!t.name.empty() && t.name != "__metadata__", "safetensors file '", path,
             "': a tensor needs a name other than '' and '__metadata__'");
    TZ_CHECK(i == 0 || tensors[i - 1].name != t.name, "safetensors file '", path, "': tensor name '", t.name,
             "' is given twice");
    TZ_CHECK(int(t.raw != nullptr) + int(t.f32 != nullptr) + int(bool(t.fill)) == 1, where,
             " needs exactly one of raw bytes, fp32 values or a fill function");
    TZ_CHECK(t.raw || converts_to_float(t.dtype), where, " has dtype ", safetensors_dtype_name(t.dtype),
             "; fp32 values can only be written as F32, F16 or BF16");
    for (auto d : t.shape) TZ_CHECK(d >= 0, where, " has a negative dimension in shape ", shape_str(t.shape));
    auto bytes = shape_bytes(t.shape, t.dtype);
    TZ_CHECK(bytes.has_value(), where, " has a shape ", shape_str(t.shape), " too large to address");
    header[t.name] = {{"dtype", safetensors_dtype_name(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + *bytes}}};
    offset += *bytes;
  }
  // Pad with spaces (valid JSON whitespace) so the data section starts 8-byte aligned.
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');

  AtomicOutputFile out(path, "safetensors file");
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(std::uint64_t(text.size()) >> (8 * i));
  out.write(len, 8);
  out.write(text.data(), text.size());
  std::vector<std::uint16_t> stage;
  std::vector<float> filled;  // one tensor at a time, for `fill`
  for (const auto& t : tensors) {
    std::size_t n = 1;
    for (auto d : t.shape) n *= std::size_t(d);
    const float* f32 = t.f32;
    if (t.fill) {
      filled.resize(n);
      t.fill(filled.data());
      f32 = filled.data();
    }
    if (t.raw) {
      out.write(t.raw, n * safetensors_dtype_size(t.dtype));
    } else if (t.dtype == SafetensorsDType::F32) {
      out.write(f32, n * sizeof(float));
    } else {
      stage.resize(std::min(n, kChunkElems));
      for (std::size_t i = 0; i < n; i += stage.size()) {
        const std::size_t m = std::min(stage.size(), n - i);
        if (t.dtype == SafetensorsDType::BF16)
          for (std::size_t k = 0; k < m; ++k) stage[k] = float_to_bf16(f32[i + k]).bits;
        else
          for (std::size_t k = 0; k < m; ++k) stage[k] = float_to_fp16(f32[i + k]).bits;
        out.write(stage.data(), m * 2);
      }
    }
  }
  out.commit();
}

}  // namespace tz
