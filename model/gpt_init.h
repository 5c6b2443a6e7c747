// GPT-2 initialisation (Hugging Face / nanoGPT): weights ~ N(0, 0.02), residual output projections
// ~ N(0, 0.02 / sqrt(2 n_layer)), biases 0, LayerNorm weights 1; padded vocabulary rows 0.
#pragma once

#include <cstdint>
#include <vector>

#include "model/param_layout.h"

namespace tz {

// Fills `values` (resized to layout.groups[g].count) with group g's initial values, independently of
// the other groups, so an engine can initialise one group at a time.
void init_gpt_group(const ModelConfig& cfg, const ParamLayout& layout, std::uint64_t seed, int g,
                    std::vector<float>& values);

// Fills groups[g] (resized to layout.groups[g].count) in fp32. The same seed gives the same values
// with any compiler and standard library (the generator and the normal transform are our own).
void init_gpt_params(const ModelConfig& cfg, const ParamLayout& layout, std::uint64_t seed,
                     std::vector<std::vector<float>>& groups);

}  // namespace tz
