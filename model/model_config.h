// GPT-2 model shapes: presets (tiny, gpt2 ... gpt2-xl) and free sizes, with the padded vocabulary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tz {

// The largest shapes accepted (a file's or the flags'): far beyond GPT-3 (96 layers, width 12288, 50257
// tokens, 2048 positions), and small enough that every element and byte count of a model fits in 64 bits
// (the largest, 12 x layers x width^2 x 20 bytes, is below 2^53).
inline constexpr int kMaxLayers = 1 << 12;
inline constexpr int kMaxWidth = 1 << 16;
inline constexpr int kMaxVocab = 1 << 24;
inline constexpr int kMaxSeqLen = 1 << 20;

struct GptConfig {
  int n_layer = 12;
  int n_head = 12;
  int n_embd = 768;
  int vocab_size = 50257;         // real vocabulary
  int padded_vocab_size = 50304;  // rows of wte; padding rows never get probability mass
  int max_seq_len = 1024;         // rows of wpe

  // Rounds the vocabulary up to a multiple of 128 (50257 -> 50304 as llm.c; 256 stays 256).
  static int pad_vocab(int vocab);
  // Throws tz::Error naming the bad field and its flag (e.g. n_embd not divisible by n_head, or a size
  // beyond the bounds above).
  void validate() const;
  // Parameter count including padded vocabulary rows (what is allocated and trained).
  std::size_t num_parameters() const;
  // Parameter count as Hugging Face counts it (vocab rows unpadded).
  std::size_t num_parameters_unpadded() const;
};

// "tiny", "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"; throws for an unknown name, listing the known.
GptConfig gpt_preset(const std::string& name);
std::vector<std::string> gpt_preset_names();

}  // namespace tz
