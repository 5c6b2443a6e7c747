// SafetensorsStream: header from the declarations, then each tensor's data as it is put.
#include "model/safetensors_stream.h"

#include <algorithm>
#include <bit>
#include <nlohmann/json.hpp>
#include <set>

#include "core/dtype.h"
#include "core/error.h"

namespace tz {

static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

using json = nlohmann::json;
using namespace safetensors_detail;

std::size_t SafetensorsDecl::count() const {
  std::size_t n = 1;
  for (auto d : shape) n *= std::size_t(d);
  return n;
}

std::uint64_t safetensors_bytes(const SafetensorsDecl& t) {
  auto b = shape_bytes(t.shape, t.dtype);
  TZ_CHECK(b.has_value(), "tensor '", t.name, "' has a shape ", shape_str(t.shape), " too large to address");
  return *b;
}

SafetensorsStream::SafetensorsStream(std::string path, std::vector<SafetensorsDecl> tensors,
                                     const std::map<std::string, std::string>& metadata)
    : path_(std::move(path)), tensors_(std::move(tensors)), out_(path_, "safetensors file") {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  for (const auto& t : tensors_) {
    const std::string where = "tensor '" + t.name + "' for safetensors file '" + path_ + "'";
    TZ_CHECK(!t.name.empty() && t.name != "__metadata__", "safetensors file '", path_,
             "': a tensor needs a name other than '' and '__metadata__'");
    TZ_CHECK(names.insert(t.name).second, "safetensors file '", path_, "': tensor name '", t.name,
             "' is given twice");
    for (auto d : t.shape) TZ_CHECK(d >= 0, where, " has a negative dimension in shape ", shape_str(t.shape));
    auto bytes = shape_bytes(t.shape, t.dtype);
    TZ_CHECK(bytes.has_value(), where, " has a shape ", shape_str(t.shape), " too large to address");
    header[t.name] = {{"dtype", safetensors_dtype_name(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {data_bytes_, data_bytes_ + *bytes}}};
    data_bytes_ += *bytes;
  }
  // Pad with spaces (valid JSON whitespace) so the data section starts 8-byte aligned.
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(std::uint64_t(text.size()) >> (8 * i));
  out_.write(len, 8);
  out_.write(text.data(), text.size());
}

void SafetensorsStream::put(const float* f32) {
  TZ_CHECK(!done(), "safetensors file '", path_, "': more tensors put than its ", tensors_.size(), " declared");
  const SafetensorsDecl& t = tensors_[next_];
  TZ_CHECK(converts_to_float(t.dtype), "tensor '", t.name, "' for safetensors file '", path_, "' has dtype ",
           safetensors_dtype_name(t.dtype), "; fp32 values can only be written as F32, F16 or BF16");
  const std::size_t n = t.count();
  if (t.dtype == SafetensorsDType::F32) {
    out_.write(f32, n * sizeof(float));
  } else {
    std::vector<std::uint16_t> stage(std::min(n, kChunkElems));
    for (std::size_t i = 0; i < n; i += stage.size()) {
      const std::size_t m = std::min(stage.size(), n - i);
      if (t.dtype == SafetensorsDType::BF16)
        for (std::size_t k = 0; k < m; ++k) stage[k] = float_to_bf16(f32[i + k]).bits;
      else
        for (std::size_t k = 0; k < m; ++k) stage[k] = float_to_fp16(f32[i + k]).bits;
      out_.write(stage.data(), m * 2);
    }
  }
  ++next_;
}

void SafetensorsStream::put_raw(const void* bytes) {
  TZ_CHECK(!done(), "safetensors file '", path_, "': more tensors put than its ", tensors_.size(), " declared");
  out_.write(bytes, safetensors_bytes(tensors_[next_]));
  ++next_;
}

void SafetensorsStream::commit() {
  TZ_CHECK(done(), "safetensors file '", path_, "': committed after ", next_, " of its ", tensors_.size(),
           " tensors");
  out_.commit();
}

}  // namespace tz
