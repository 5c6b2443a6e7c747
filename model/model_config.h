// A model's shape, whatever its family: the family's name (a key into the registry of
// model/model_family.h) and the sizes the layout, the plan and the reports read. Presets and the rules
// of each shape are the family's.
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

struct ModelConfig {
  std::string family = "gpt2";    // the model family (model_family(family))
  int n_layer = 12;
  int n_head = 12;
  int n_embd = 768;
  int vocab_size = 50257;         // real vocabulary
  int padded_vocab_size = 50304;  // rows of the token embedding; padding rows never get probability mass
  int max_seq_len = 1024;         // the longest sequence (GPT-2: rows of its position table)

  // What other families read (GPT-2 leaves them at these values). Hugging Face's names in brackets.
  int n_kv_head = 0;              // key-value heads [num_key_value_heads]; 0: n_head
  int head_dim = 0;               // [head_dim]; 0: n_embd / n_head
  int ffn_dim = 0;                // the MLP's hidden width [intermediate_size]; 0: the family's rule
  double norm_eps = 1e-5;         // [rms_norm_eps]
  double rope_theta = 10000;      // [rope_theta]
  // [rope_scaling] of type "llama3" (Llama 3.1): factor > 0 turns it on.
  double rope_factor = 0, rope_low_freq_factor = 1, rope_high_freq_factor = 4;
  int rope_original_max_seq_len = 0;  // [original_max_position_embeddings]
  bool tied_head = true;          // the LM head is the token embedding [tie_word_embeddings]
  bool qkv_bias = false;          // q, k and v projections with biases (Qwen2; Llama's attention_bias)
  bool o_bias = false;            // the attention output projection with a bias (Llama's attention_bias)
  bool mlp_bias = false;          // the MLP's projections with biases [mlp_bias]
  int sliding_window = 0;         // attention window (Mistral) [sliding_window]; 0: none. Not built: a
                                  // sequence longer than the window is refused

  // Rounds the vocabulary up to a multiple of 128 (50257 -> 50304 as llm.c; 256 stays 256).
  static int pad_vocab(int vocab);
  // The family's checks: throws tz::Error naming the bad field and its flag (e.g. n_embd not divisible by
  // n_head, a size beyond the bounds above, an unregistered family).
  void validate() const;
  // Parameter count including padded vocabulary rows (what is allocated and trained).
  std::size_t num_parameters() const;
  // Parameter count as Hugging Face counts it (vocabulary rows unpadded).
  std::size_t num_parameters_unpadded() const;
  // One line for logs, reports and refusals: "2 layers, 4 heads, 64 wide, vocab 256 (padded 256), 64
  // positions", with the family's name first when it is not GPT-2's.
  std::string describe() const;

  bool operator==(const ModelConfig&) const = default;
};

// A preset of any registered family by name ("tiny", "gpt2", ...); throws for an unknown name, listing
// every family's presets.
ModelConfig model_preset(const std::string& name);
std::vector<std::string> model_preset_names();

}  // namespace tz
