// Model-choosing flags and their resolution into a ModelConfig.
#include "launch/model_options.h"

#include <tuple>
#include <utility>

#include "core/error.h"
#include "model/hf_folder.h"
#include "model/model_family.h"

namespace po = boost::program_options;

namespace tz {

void add_model_flags(po::options_description& desc, ModelFlags& f) {
  std::string presets;
  for (const std::string& p : model_preset_names()) presets += (presets.empty() ? "" : ", ") + p;
  desc.add_options()
      ("model", po::value(&f.preset)->default_value(f.preset),
       ("model preset: " + presets + " (docs/configuration.md#model-presets); size flags override it field by "
        "field, and the run is then named custom (based on PRESET)").c_str())
      ("n-layer", po::value(&f.n_layer)->default_value(0), "transformer blocks (0: the preset's)")
      ("n-head", po::value(&f.n_head)->default_value(0),
       "attention heads (0: the preset's); must divide --n-embd")
      ("n-embd", po::value(&f.n_embd)->default_value(0), "embedding width (0: the preset's)")
      ("vocab", po::value(&f.vocab)->default_value(0),
       "real vocabulary size, at least 2 (0: the preset's); padded inside to a multiple of 128")
      ("seq-len", po::value(&f.seq_len)->default_value(f.seq_len),
       "tokens per training sequence (T); the position table grows to it if the preset's is shorter, never "
       "shrinks");
}

ModelConfig resolve_model(const ModelFlags& f) {
  // Each flag in its own range first (0: the preset's), so that the message names it.
  const std::pair<const char*, std::pair<int, int>> sizes[] = {{"n-layer", {f.n_layer, kMaxLayers}},
                                                               {"n-head", {f.n_head, kMaxWidth}},
                                                               {"n-embd", {f.n_embd, kMaxWidth}},
                                                               {"vocab", {f.vocab, kMaxVocab}}};
  for (const auto& [flag, v] : sizes)
    TZ_CHECK(v.first >= 0 && v.first <= v.second, "--", flag, " must be in [0, ", v.second,
             "] (0: the preset's), got ", v.first);
  TZ_CHECK(f.vocab != 1, "--vocab must be at least 2 (0: the preset's), got 1");
  TZ_CHECK(f.seq_len >= 1 && f.seq_len <= kMaxSeqLen, "--seq-len must be in [1, ", kMaxSeqLen, "], got ", f.seq_len);
  ModelConfig c = model_preset(f.preset);
  if (f.n_layer) c.n_layer = f.n_layer;
  if (f.n_head) c.n_head = f.n_head;
  if (f.n_embd) c.n_embd = f.n_embd;
  if (f.vocab) c.vocab_size = f.vocab;
  c.padded_vocab_size = ModelConfig::pad_vocab(c.vocab_size);
  if (f.seq_len > c.max_seq_len) c.max_seq_len = f.seq_len;
  c.validate();
  return c;
}

std::string resolve_model_name(const ModelFlags& f) {
  if (f.n_layer || f.n_head || f.n_embd || f.vocab) return "custom (based on " + f.preset + ")";
  return f.preset;
}

ModelConfig model_from_file(const ModelFlags& f, const std::string& path) {
  TZ_CHECK(f.n_head >= 0 && f.n_head <= kMaxWidth, "--n-head must be in [0, ", kMaxWidth, "] (0: the preset's), got ",
           f.n_head);
  if (is_hf_folder(path)) {
    // config.json gives the shape and the family; a size flag may only repeat it.
    const ModelConfig c = read_hf_config(path);
    for (auto [flag, given, has] : {std::tuple{"--n-layer", f.n_layer, c.n_layer}, {"--n-head", f.n_head, c.n_head},
                                    {"--n-embd", f.n_embd, c.n_embd}, {"--vocab", f.vocab, c.vocab_size}})
      TZ_CHECK(given == 0 || given == has, flag, " ", given, " contradicts ", path, "/config.json, which gives ", has,
               ": drop the flag");
    TZ_CHECK(f.seq_len <= c.max_seq_len, "--seq-len ", f.seq_len, " exceeds ", path,
             "/config.json's max_position_embeddings (", c.max_seq_len, ")");
    TZ_CHECK(c.sliding_window == 0 || f.seq_len <= c.sliding_window, "--seq-len ", f.seq_len, " is longer than ", path,
             "/config.json's sliding_window (", c.sliding_window, "), and windowed attention is not built: use --seq-len ",
             c.sliding_window, " or less");
    return c;
  }
  const ModelConfig c = model_family(model_preset(f.preset)).config_from_safetensors(path, f.n_head);
  TZ_CHECK(f.seq_len <= c.max_seq_len, "--seq-len ", f.seq_len, " exceeds the position table of ", path, " (",
           c.max_seq_len, " rows)");
  return c;
}

DType parse_compute_dtype(const std::string& s) {
  if (s == "fp32" || s == "f32" || s == "float32") return DType::f32;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  if (s == "fp16" || s == "f16" || s == "float16") return DType::f16;
  TZ_FAIL("unknown --dtype '", s, "': use fp32, bf16 or fp16");
}

}  // namespace tz
