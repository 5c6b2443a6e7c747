// SafetensorsStream: one safetensors file written a tensor at a time, in the order the tensors were
// declared. The header (every name, dtype, shape and offset) is known from the declarations, so the
// values can arrive one tensor at a time from wherever they live (a gathered parameter group, a
// checkpoint's file): the writer holds none of them. Atomic like every output (AtomicOutputFile).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/file_io.h"
#include "model/safetensors_format.h"

namespace tz {

struct SafetensorsDecl {
  std::string name;
  SafetensorsDType dtype = SafetensorsDType::F32;
  std::vector<std::int64_t> shape;

  std::size_t count() const;  // elements (1 for a scalar)
};

class SafetensorsStream {
 public:
  // Writes the header at once, the header padded with spaces to a multiple of 8 bytes. Refuses an empty
  // or repeated name, "__metadata__", a negative or unaddressable shape, naming the tensor and `path`.
  SafetensorsStream(std::string path, std::vector<SafetensorsDecl> tensors,
                    const std::map<std::string, std::string>& metadata = {});

  // The next declared tensor (valid while !done()).
  const SafetensorsDecl& next() const { return tensors_.at(next_); }
  bool done() const { return next_ == tensors_.size(); }

  // The next tensor's values: fp32 converted to its dtype (F32, F16 or BF16; round to nearest even), or
  // its bytes already in that dtype.
  void put(const float* values);
  void put_raw(const void* bytes);

  // Every tensor put: flushes, renames into place. Destroyed before, nothing is left at `path`.
  void commit();

  // Bytes of the data section (what Hugging Face's index calls a shard's size).
  std::uint64_t data_bytes() const { return data_bytes_; }

 private:
  std::string path_;
  std::vector<SafetensorsDecl> tensors_;
  std::size_t next_ = 0;
  std::uint64_t data_bytes_ = 0;
  AtomicOutputFile out_;
};

// The data-section bytes of a tensor (what SafetensorsStream writes for it).
std::uint64_t safetensors_bytes(const SafetensorsDecl& t);

}  // namespace tz
