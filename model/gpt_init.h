// GPT-2 initialisation (Hugging Face / nanoGPT): weights ~ N(0, 0.02), residual output projections
// ~ N(0, 0.02 / sqrt(2 n_layer)), biases 0, LayerNorm weights 1; padded vocabulary rows 0.
#pragma once

#include <cstdint>
#include <vector>

#include "model/param_layout.h"

namespace tz {

// Fills groups[g] (resized to layout.groups[g].count) in fp32. The same seed gives the same values
// with any compiler and standard library (the generator and the normal transform are our own).
void init_gpt_params(const GptConfig& cfg, const ParamLayout& layout, std::uint64_t seed,
                     std::vector<std::vector<float>>& groups);

// True for tensors AdamW's weight decay applies to: matrices and embeddings (2-D), not biases or
// LayerNorm parameters (the Hugging Face Trainer / nanoGPT convention).
bool is_decayed(const TensorSpec& t);

}  // namespace tz
