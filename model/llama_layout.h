// The Llama family's parameter layout (Llama, Qwen2, Mistral): the embedding group (embed_tokens, and
// lm_head when the head is untied), one group per decoder layer, the final RMSNorm's, with Hugging
// Face's names. Matrices are stored as Hugging Face's nn.Linear stores them, [out, in], so a folder loads
// without a transpose; the token embedding and the head have padded vocabulary rows.
#pragma once

#include "model/model_config.h"
#include "model/param_layout.h"

namespace tz {

// The sizes a Llama-family config implies: heads of head_dim, n_kv_head of them for keys and values.
struct LlamaDims {
  int C, H, KV, hd, I;
  static LlamaDims of(const ModelConfig& c) {
    const int hd = c.head_dim ? c.head_dim : c.n_embd / c.n_head;
    return {c.n_embd, c.n_head, c.n_kv_head ? c.n_kv_head : c.n_head, hd, c.ffn_dim};
  }
};

ParamLayout llama_layout(const ModelConfig& cfg);

}  // namespace tz
