// GPT-2 import and export on top of the safetensors reader and writer: Hugging Face's names and layout.
#include "model/gpt_safetensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "core/error.h"
#include "core/progress.h"
#include "model/layout_safetensors.h"
#include "model/safetensors_writer.h"

namespace tz {
namespace {

using namespace safetensors_detail;

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

ModelConfig infer_gpt_config_from_safetensors(const std::string& path, int n_head) {
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

  ModelConfig c;
  c.n_layer = n_layer;
  c.n_head = n_head;
  c.n_embd = int(wte->shape[1]);
  c.vocab_size = int(wte->shape[0]);
  c.padded_vocab_size = ModelConfig::pad_vocab(c.vocab_size);
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
  std::uint64_t total = 0;
  for (const auto& [name, t] : named) total += t->count() * safetensors_dtype_size(t->dtype);
  Progress progress("loading " + path, total);
  for (const auto& [name, t] : named) {
    progress.advance(t->count() * safetensors_dtype_size(t->dtype));  // read below, or skipped
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
  // hf_shape drops wte's padded rows; GPT-2 stores Conv1D weights [in, out] as Hugging Face does.
  save_layout_safetensors(path, layout, groups, dtype, "GPT-2 weights");
}

}  // namespace tz
