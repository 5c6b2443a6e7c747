// SafetensorsReader: opens a safetensors file, validates its whole header, and reads tensors on demand,
// raw or converted to float.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/file_io.h"
#include "model/safetensors_format.h"

namespace tz {

// Opens a safetensors file and validates its whole header; tensor data is read on demand.
class SafetensorsReader {
 public:
  explicit SafetensorsReader(const std::string& path);

  const std::string& path() const { return file_.path(); }
  // Sorted by name.
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* find(const std::string& name) const;  // null when absent
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  std::uint64_t header_size() const { return header_size_; }  // bytes of JSON, padding included
  std::uint64_t data_start() const { return 8 + header_size_; }

  // Copies the tensor's raw bytes (t.nbytes() of them).
  void read_raw(const SafetensorsTensor& t, void* dst) const;
  // The file's first data_start() bytes (the length field and the JSON header), read again.
  std::string header_bytes() const;
  // Converts an F32, F16 or BF16 tensor to float (t.count() values); other dtypes throw. `seen`, if
  // given, gets the tensor's bytes as they were read.
  void read_f32(const SafetensorsTensor& t, float* dst, const SeenBytes& seen = {}) const;
  std::vector<float> read_f32(const SafetensorsTensor& t) const;

 private:
  InputFile file_;
  std::uint64_t header_size_ = 0;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace tz
