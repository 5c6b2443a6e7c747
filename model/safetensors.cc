// Safetensors reading/writing with full header validation, and GPT-2 import/export on top of it.
#include "model/safetensors.h"

#include <algorithm>
#include <cmath>
#include <array>
#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/error.h"
#include "model/json_bounded.h"

namespace tz {

// Safetensors stores little-endian data; we copy it straight into host memory.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {

using json = nlohmann::json;

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

// Conversion staging: big enough to amortise syscalls, small enough not to matter next to the model.
constexpr std::size_t kChunkElems = std::size_t(1) << 20;

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

std::string strip_prefix(const std::string& name) {
  static const std::string kPrefix = "transformer.";
  return name.rfind(kPrefix, 0) == 0 ? name.substr(kPrefix.size()) : name;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The file's tensors by name without "transformer."; a file naming one tensor both ways is refused.
std::map<std::string, const SafetensorsTensor*> by_stripped_name(const SafetensorsReader& r) {
  std::map<std::string, const SafetensorsTensor*> out;
  for (const auto& t : r.tensors()) {
    auto [it, fresh] = out.emplace(strip_prefix(t.name), &t);
    TZ_CHECK(fresh, "safetensors file '", r.path(), "' holds both '", it->second->name, "' and '", t.name,
             "', the same GPT-2 tensor with and without the 'transformer.' prefix; keep one of them");
  }
  return out;
}

}  // namespace

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

// ---- reader ----

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

// ---- writer ----

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

// ---- GPT-2 ----

GptConfig infer_gpt_config_from_safetensors(const std::string& path, int n_head) {
  SafetensorsReader r(path);
  auto named = by_stripped_name(r);
  auto get2d = [&](const std::string& name) {
    auto it = named.find(name);
    TZ_CHECK(it != named.end(), "safetensors file '", path, "' has no '", name, "' (nor 'transformer.", name,
             "'); it is not a Hugging Face GPT-2 checkpoint");
    TZ_CHECK(it->second->shape.size() == 2, "tensor '", it->second->name, "' in safetensors file '", path,
             "' has shape ", shape_str(it->second->shape), "; GPT-2 expects 2 dimensions [rows, n_embd]");
    return it->second;
  };
  const SafetensorsTensor* wte = get2d("wte.weight");
  const SafetensorsTensor* wpe = get2d("wpe.weight");
  TZ_CHECK(wpe->shape[1] == wte->shape[1], "safetensors file '", path, "': wpe.weight has shape ",
           shape_str(wpe->shape), " but wte.weight has ", shape_str(wte->shape),
           "; their widths (n_embd) differ");

  std::set<int> layers;
  for (const auto& [name, t] : named) {
    if (name.rfind("h.", 0) != 0) continue;
    std::size_t dot = name.find('.', 2);
    const std::string idx = name.substr(2, dot == std::string::npos ? std::string::npos : dot - 2);
    TZ_CHECK(!idx.empty() && idx.size() < 9 &&
                 std::all_of(idx.begin(), idx.end(), [](char ch) { return ch >= '0' && ch <= '9'; }),
             "tensor '", t->name, "' in safetensors file '", path, "' does not name a block as h.<number>.");
    layers.insert(std::stoi(idx));
  }
  TZ_CHECK(!layers.empty(), "safetensors file '", path,
           "' has no transformer blocks (h.0.*); not a GPT-2 checkpoint");
  const int n_layer = int(layers.size());
  TZ_CHECK(*layers.rbegin() == n_layer - 1, "safetensors file '", path, "' has blocks up to h.",
           *layers.rbegin(), " but only ", n_layer, " of them; the blocks must be numbered 0..n_layer-1");

  GptConfig c;
  c.n_layer = n_layer;
  c.n_head = n_head;
  c.n_embd = int(wte->shape[1]);
  c.vocab_size = int(wte->shape[0]);
  c.padded_vocab_size = GptConfig::pad_vocab(c.vocab_size);
  c.max_seq_len = int(wpe->shape[0]);
  TZ_CHECK(n_head >= 1 && c.n_embd % n_head == 0, "safetensors file '", path, "' has n_embd ", c.n_embd,
           ", which the given n_head ", n_head, " does not divide; pass the model's real head count");
  c.validate();
  return c;
}

void load_gpt_safetensors(const std::string& path, const ParamLayout& layout,
                          std::vector<std::vector<float>>& groups, const SeenBytes& seen) {
  SafetensorsReader r(path);
  if (seen) {
    const std::string header = r.header_bytes();
    seen(header.data(), header.size());
  }
  auto named = by_stripped_name(r);
  groups.resize(layout.groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) groups[g].assign(layout.groups[g].count, 0.0f);

  std::set<std::string> loaded;
  const SafetensorsTensor* lm_head = nullptr;
  for (const auto& [name, t] : named) {
    // Causal-mask buffers that older transformers versions saved; they are not parameters.
    if (ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias")) continue;
    if (name == "lm_head.weight") {
      lm_head = t;
      continue;
    }
    int g = -1;
    const TensorSpec* spec = layout.find(name, &g);
    TZ_CHECK(spec != nullptr, "safetensors file '", path, "' holds tensor '", t->name,
             "', which this GPT-2 model (n_layer ", layout.groups.size() - 2,
             ") does not have; check the model size matches the checkpoint");
    TZ_CHECK(converts_to_float(t->dtype), "tensor '", t->name, "' in safetensors file '", path,
             "' has dtype ", safetensors_dtype_name(t->dtype), "; GPT-2 weights must be F32, F16 or BF16");
    TZ_CHECK(t->shape == spec->hf_shape, "tensor '", t->name, "' in safetensors file '", path, "' has shape ",
             shape_str(t->shape), " but the model expects ", shape_str(spec->hf_shape),
             "; check the model size matches the checkpoint");
    float* values = groups[g].data() + spec->offset;
    r.read_f32(*t, values, seen);
    for (std::size_t i = 0, n = t->count(); i < n; ++i)
      TZ_CHECK(std::isfinite(values[i]), "tensor '", t->name, "' in safetensors file '", path, "' holds ",
               values[i], " at element ", i, ": a model with NaN or Inf weights cannot be trained from");
    loaded.insert(spec->name);
  }

  std::vector<std::string> missing;
  for (const auto& g : layout.groups)
    for (const auto& t : g.tensors)
      if (!loaded.count(t.name)) missing.push_back(t.name);
  if (!missing.empty()) {
    std::ostringstream os;
    for (std::size_t i = 0; i < missing.size() && i < 5; ++i)
      os << (i ? ", " : "") << "'" << missing[i] << "'";
    if (missing.size() > 5) os << " and " << missing.size() - 5 << " more";
    TZ_FAIL("safetensors file '", path, "' is missing tensor ", os.str(),
            " (looked for each with and without the 'transformer.' prefix); check the model size matches the "
            "checkpoint");
  }

  if (lm_head) {
    const TensorSpec* wte = layout.find("wte.weight");
    TZ_CHECK(lm_head->shape == wte->hf_shape, "tensor '", lm_head->name, "' in safetensors file '", path,
             "' has shape ", shape_str(lm_head->shape), " but it is tied to wte.weight, shape ",
             shape_str(wte->hf_shape));
    TZ_CHECK(converts_to_float(lm_head->dtype), "tensor '", lm_head->name, "' in safetensors file '", path,
             "' has dtype ", safetensors_dtype_name(lm_head->dtype),
             "; GPT-2 weights must be F32, F16 or BF16");
    std::vector<float> head(lm_head->count());
    r.read_f32(*lm_head, head.data(), seen);
    const float* emb = groups[layout.embedding_group()].data() + wte->offset;
    for (std::size_t i = 0; i < head.size(); ++i)
      TZ_CHECK(std::memcmp(&head[i], &emb[i], sizeof(float)) == 0, "safetensors file '", path,
               "': ", lm_head->name, " differs from wte.weight at row ", i / std::size_t(wte->hf_shape[1]),
               ", column ", i % std::size_t(wte->hf_shape[1]), " (", head[i], " vs ", emb[i],
               "); tierzero ties the output head to the token embedding and cannot load an untied model");
  }
}

void save_gpt_safetensors(const std::string& path, const ParamLayout& layout,
                          const std::vector<const float*>& groups, DType dtype) {
  TZ_CHECK(dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16, "saving GPT-2 weights to '",
           path, "' as ", dtype_name(dtype), " is not supported; use fp32, bf16 or fp16");
  TZ_CHECK(groups.size() == layout.groups.size(), "saving GPT-2 weights to '", path, "': got ", groups.size(),
           " parameter groups but the layout has ", layout.groups.size());
  const SafetensorsDType sd = to_safetensors_dtype(dtype);
  std::vector<SafetensorsWriteTensor> tensors;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    TZ_CHECK(groups[g] != nullptr, "saving GPT-2 weights to '", path, "': group ", layout.groups[g].name,
             " has no data");
    // hf_shape drops wte's padded rows: they are the tail of a row-major [padded_vocab, C] block.
    for (const auto& t : layout.groups[g].tensors)
      tensors.push_back({"transformer." + t.name, sd, t.hf_shape, nullptr, groups[g] + t.offset, nullptr});
  }
  write_safetensors(path, std::move(tensors), {{"format", "pt"}});
}

}  // namespace tz
