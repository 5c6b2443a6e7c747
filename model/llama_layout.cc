// Builds the Llama family's flat-group layout with Hugging Face's names and [out, in] matrices.
#include "model/llama_layout.h"

#include <string>

namespace tz {
namespace {

// Llama's decay rule, as GPT-2's: matrices and embeddings decay, biases and RMSNorm weights do not. The
// family's names are Hugging Face's own. packed: the next tensor follows without alignment padding.
void add(GroupSpec& g, const std::string& name, std::vector<std::int64_t> shape, std::vector<std::int64_t> hf = {},
         bool packed = false) {
  const bool decay = shape.size() >= 2;
  add_tensor(g, name, name, std::move(shape), std::move(hf), decay, packed);
}

}  // namespace

ParamLayout llama_layout(const ModelConfig& cfg) {
  cfg.validate();
  const LlamaDims d = LlamaDims::of(cfg);
  const std::int64_t C = d.C, Q = std::int64_t(d.H) * d.hd, KV = std::int64_t(d.KV) * d.hd, I = d.I;
  ParamLayout L;

  // The head, when untied, is held with the embedding: stage 3 keeps both through a whole pass.
  GroupSpec emb{"embedding", GroupKind::embedding, -1, {}, 0};
  add(emb, "model.embed_tokens.weight", {cfg.padded_vocab_size, C}, {cfg.vocab_size, C});
  if (!cfg.tied_head) add(emb, "lm_head.weight", {cfg.padded_vocab_size, C}, {cfg.vocab_size, C});
  L.add_group(std::move(emb));

  for (int l = 0; l < cfg.n_layer; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    GroupSpec g{"block." + std::to_string(l), GroupKind::block, l, {}, 0};
    // q, k and v back to back (one [Q + 2 KV, C] matrix to the products), and their biases; gate and up
    // likewise ([2I, C]).
    add(g, p + "input_layernorm.weight", {C});
    add(g, p + "self_attn.q_proj.weight", {Q, C}, {}, true);
    add(g, p + "self_attn.k_proj.weight", {KV, C}, {}, true);
    add(g, p + "self_attn.v_proj.weight", {KV, C});
    if (cfg.qkv_bias) {
      add(g, p + "self_attn.q_proj.bias", {Q}, {}, true);
      add(g, p + "self_attn.k_proj.bias", {KV}, {}, true);
      add(g, p + "self_attn.v_proj.bias", {KV});
    }
    add(g, p + "self_attn.o_proj.weight", {C, Q});
    if (cfg.o_bias) add(g, p + "self_attn.o_proj.bias", {C});
    add(g, p + "post_attention_layernorm.weight", {C});
    add(g, p + "mlp.gate_proj.weight", {I, C}, {}, true);
    add(g, p + "mlp.up_proj.weight", {I, C});
    if (cfg.mlp_bias) {
      add(g, p + "mlp.gate_proj.bias", {I}, {}, true);
      add(g, p + "mlp.up_proj.bias", {I});
    }
    add(g, p + "mlp.down_proj.weight", {C, I});
    if (cfg.mlp_bias) add(g, p + "mlp.down_proj.bias", {C});
    L.add_group(std::move(g));
  }

  GroupSpec fn{"final_norm", GroupKind::final_norm, -1, {}, 0};
  add(fn, "model.norm.weight", {C});
  L.add_group(std::move(fn));
  return L;
}

}  // namespace tz
