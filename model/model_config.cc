// GPT-2 presets as Hugging Face defines them, plus a tiny one for tests.
#include "model/gpt_config.h"

#include "core/error.h"

namespace tz {

int GptConfig::pad_vocab(int vocab) { return (vocab + 127) / 128 * 128; }

void GptConfig::validate() const {
  TZ_CHECK(n_layer >= 1 && n_layer <= kMaxLayers, "n_layer (--n-layer) must be in [1, ", kMaxLayers, "], got ",
           n_layer);
  TZ_CHECK(n_head >= 1 && n_head <= kMaxWidth, "n_head (--n-head) must be in [1, ", kMaxWidth, "], got ", n_head);
  TZ_CHECK(n_embd >= 1 && n_embd <= kMaxWidth, "n_embd (--n-embd) must be in [1, ", kMaxWidth, "], got ", n_embd);
  TZ_CHECK(n_embd % n_head == 0, "n_embd (", n_embd, ") must be a positive multiple of n_head (", n_head, ")");
  TZ_CHECK(vocab_size >= 2 && vocab_size <= kMaxVocab, "vocab (--vocab) must be in [2, ", kMaxVocab, "], got ",
           vocab_size);
  TZ_CHECK(padded_vocab_size >= vocab_size, "padded vocab (", padded_vocab_size, ") is smaller than vocab (",
           vocab_size, ")");
  TZ_CHECK(max_seq_len >= 1 && max_seq_len <= kMaxSeqLen, "seq-len (--seq-len) must be in [1, ", kMaxSeqLen,
           "], got ", max_seq_len);
}

std::size_t GptConfig::num_parameters() const {
  std::size_t C = n_embd, L = n_layer;
  std::size_t block = 2 * C + (C * 3 * C + 3 * C) + (C * C + C) + 2 * C + (C * 4 * C + 4 * C) + (4 * C * C + C);
  return std::size_t(padded_vocab_size) * C + std::size_t(max_seq_len) * C + L * block + 2 * C;
}

std::size_t GptConfig::num_parameters_unpadded() const {
  return num_parameters() - std::size_t(padded_vocab_size - vocab_size) * n_embd;
}

GptConfig gpt_preset(const std::string& name) {
  GptConfig c;
  if (name == "tiny") {
    c.n_layer = 2;
    c.n_head = 4;
    c.n_embd = 64;
    c.vocab_size = 256;
    c.max_seq_len = 64;
  } else if (name == "gpt2") {
    c.n_layer = 12, c.n_head = 12, c.n_embd = 768;
  } else if (name == "gpt2-medium") {
    c.n_layer = 24, c.n_head = 16, c.n_embd = 1024;
  } else if (name == "gpt2-large") {
    c.n_layer = 36, c.n_head = 20, c.n_embd = 1280;
  } else if (name == "gpt2-xl") {
    c.n_layer = 48, c.n_head = 25, c.n_embd = 1600;
  } else {
    TZ_FAIL("unknown model preset '", name, "': use tiny, gpt2, gpt2-medium, gpt2-large or gpt2-xl, ",
            "or give --n-layer --n-head --n-embd --vocab --seq-len");
  }
  c.padded_vocab_size = GptConfig::pad_vocab(c.vocab_size);
  return c;
}

std::vector<std::string> gpt_preset_names() { return {"tiny", "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"}; }

}  // namespace tz
