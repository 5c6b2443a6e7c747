// Safetensors files: a validating generic reader and writer (8-byte little-endian header length, JSON
// header, raw little-endian data), and GPT-2 import/export in the layout Hugging Face transformers loads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "model/file_io.h"
#include "model/gpt_config.h"
#include "model/param_layout.h"

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

// The largest JSON header read (the reference implementation's limit, 100 MB).
inline constexpr std::uint64_t kMaxSafetensorsHeader = 100'000'000;

// ---- GPT-2 ----

// Reads n_layer (number of h.N blocks), n_embd and vocab (wte), max_seq_len (wpe rows) from a
// Hugging Face GPT-2 file; n_head is not stored there, so it is given. Padded vocab = pad_vocab(vocab).
GptConfig infer_gpt_config_from_safetensors(const std::string& path, int n_head);

// Fills groups[g] (resized to layout.groups[g].count, padding zero) with the file's values as fp32.
// Names may carry the "transformer." prefix or not; attn.bias / attn.masked_bias buffers are ignored;
// lm_head.weight, if present, must equal wte.weight (they are tied). wte has vocab_size rows in the
// file; rows [vocab, padded_vocab) are zero. Missing, extra or misshapen tensors and dtypes other
// than F32/F16/BF16 throw. `seen`, if given, gets every byte read, in the order read (the header, then
// each tensor loaded in name order): the ranks of a job compare a hash of it.
void load_gpt_safetensors(const std::string& path, const ParamLayout& layout,
                          std::vector<std::vector<float>>& groups, const SeenBytes& seen = {});

// Writes what transformers.GPT2LMHeadModel.from_pretrained loads: "transformer."-prefixed names,
// Conv1D weights [in, out], wte with vocab_size rows, no lm_head.weight (tied), no attn.bias buffers,
// metadata {"format": "pt"}. dtype is f32, bf16 or f16. groups[g] points at layout.groups[g].count floats.
void save_gpt_safetensors(const std::string& path, const ParamLayout& layout,
                          const std::vector<const float*>& groups, DType dtype);

}  // namespace tz
