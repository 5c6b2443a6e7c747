// GPT-2's parameter layout: the embedding group (wte, wpe), one group per block, the final LayerNorm's,
// with Hugging Face's names and shapes, and where each tensor sits for the kernels.
#pragma once

#include <cstddef>

#include "model/model_config.h"
#include "model/param_layout.h"

namespace tz {

// Offsets (elements) of each tensor inside a block's flat group.
struct BlockOffsets {
  std::size_t ln1_w, ln1_b, qkv_w, qkv_b, attproj_w, attproj_b, ln2_w, ln2_b, fc_w, fc_b, fcproj_w, fcproj_b;
};

struct GptOffsets {
  BlockOffsets block;                     // identical for every block
  std::size_t wte = 0, wpe = 0;           // in the embedding group
  std::size_t lnf_w = 0, lnf_b = 0;       // in the final_norm group
};

// The layout; `offsets`, when given, gets where each tensor sits.
ParamLayout gpt_layout(const ModelConfig& cfg, GptOffsets* offsets = nullptr);
inline GptOffsets gpt_offsets(const ModelConfig& cfg) {
  GptOffsets o;
  gpt_layout(cfg, &o);
  return o;
}

}  // namespace tz
