// Model-choosing flags and their resolution into a GptConfig.
#include "launch/model_options.h"

#include <utility>

#include "core/error.h"

namespace po = boost::program_options;

namespace tz {

void add_model_flags(po::options_description& desc, ModelFlags& f) {
  desc.add_options()
      ("model", po::value(&f.preset)->default_value(f.preset),
       "model preset: tiny, gpt2 (124M), gpt2-medium, gpt2-large, gpt2-xl; size flags override it")
      ("n-layer", po::value(&f.n_layer)->default_value(0), "transformer blocks (0: the preset's)")
      ("n-head", po::value(&f.n_head)->default_value(0), "attention heads (0: the preset's)")
      ("n-embd", po::value(&f.n_embd)->default_value(0), "embedding width (0: the preset's)")
      ("vocab", po::value(&f.vocab)->default_value(0),
       "vocabulary size (0: the preset's); padded inside to a multiple of 128")
      ("seq-len", po::value(&f.seq_len)->default_value(f.seq_len),
       "sequence length of a training sample; the position table grows to it if the preset's is shorter");
}

GptConfig resolve_model(const ModelFlags& f) {
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
  GptConfig c = gpt_preset(f.preset);
  if (f.n_layer) c.n_layer = f.n_layer;
  if (f.n_head) c.n_head = f.n_head;
  if (f.n_embd) c.n_embd = f.n_embd;
  if (f.vocab) c.vocab_size = f.vocab;
  c.padded_vocab_size = GptConfig::pad_vocab(c.vocab_size);
  if (f.seq_len > c.max_seq_len) c.max_seq_len = f.seq_len;
  c.validate();
  return c;
}

std::string resolve_model_name(const ModelFlags& f) {
  if (f.n_layer || f.n_head || f.n_embd || f.vocab) return "custom (based on " + f.preset + ")";
  return f.preset;
}

int head_count_for(const GptConfig& file, const ModelFlags& f, const std::string& path) {
  if (f.n_head) return f.n_head;
  for (const std::string& name : gpt_preset_names()) {
    GptConfig p = gpt_preset(name);
    if (p.n_embd == file.n_embd && p.n_layer == file.n_layer) return p.n_head;
  }
  TZ_FAIL(path, " has ", file.n_layer, " layers of width ", file.n_embd,
          ", which matches no GPT-2 preset: give its head count with --n-head");
}

DType parse_compute_dtype(const std::string& s) {
  if (s == "fp32" || s == "f32" || s == "float32") return DType::f32;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  if (s == "fp16" || s == "f16" || s == "float16") return DType::f16;
  TZ_FAIL("unknown --dtype '", s, "': use fp32, bf16 or fp16");
}

}  // namespace tz
