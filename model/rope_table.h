// Rotary position embedding's angles for the Llama family, as Hugging Face's LlamaRotaryEmbedding
// computes them (rope_theta; Llama 3.1's "llama3" rope_scaling when rope_factor > 0), in double.
#pragma once

#include <vector>

#include "model/model_config.h"

namespace tz {

// inv_freq[i] = rope_theta^(-2i / head_dim) for i < head_dim / 2, then the llama3 scaling: wavelengths
// longer than original / low_freq_factor divided by factor, shorter than original / high_freq_factor
// kept, those between interpolated.
std::vector<double> rope_inv_freq(const ModelConfig& cfg);

// What Backend::rope reads: cos [T, head_dim/2] then sin [T, head_dim/2] of t * inv_freq[i], each
// computed in double and rounded once to float.
std::vector<float> rope_table(const ModelConfig& cfg, int T);

}  // namespace tz
