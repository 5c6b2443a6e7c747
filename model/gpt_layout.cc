// Builds the flat-group layout of GPT-2's parameters with Hugging Face names and shapes.
#include "model/gpt_layout.h"

#include <string>

namespace tz {
namespace {

// GPT-2's decay rule: matrices and embeddings decay, biases and LayerNorm parameters do not.
std::size_t add(GroupSpec& g, const std::string& name, std::vector<std::int64_t> shape,
                std::vector<std::int64_t> hf = {}) {
  const bool decay = shape.size() >= 2;
  return add_tensor(g, name, "transformer." + name, std::move(shape), std::move(hf), decay);
}

}  // namespace

ParamLayout gpt_layout(const ModelConfig& cfg, GptOffsets* offsets) {
  cfg.validate();
  ParamLayout L;
  GptOffsets O;
  const std::int64_t C = cfg.n_embd;

  GroupSpec emb{"embedding", GroupKind::embedding, -1, {}, 0};
  O.wte = add(emb, "wte.weight", {cfg.padded_vocab_size, C}, {cfg.vocab_size, C});
  O.wpe = add(emb, "wpe.weight", {cfg.max_seq_len, C});
  L.add_group(std::move(emb));

  for (int l = 0; l < cfg.n_layer; ++l) {
    std::string p = "h." + std::to_string(l) + ".";
    GroupSpec g{"block." + std::to_string(l), GroupKind::block, l, {}, 0};
    BlockOffsets& o = O.block;
    o.ln1_w = add(g, p + "ln_1.weight", {C});
    o.ln1_b = add(g, p + "ln_1.bias", {C});
    o.qkv_w = add(g, p + "attn.c_attn.weight", {C, 3 * C});
    o.qkv_b = add(g, p + "attn.c_attn.bias", {3 * C});
    o.attproj_w = add(g, p + "attn.c_proj.weight", {C, C});
    o.attproj_b = add(g, p + "attn.c_proj.bias", {C});
    o.ln2_w = add(g, p + "ln_2.weight", {C});
    o.ln2_b = add(g, p + "ln_2.bias", {C});
    o.fc_w = add(g, p + "mlp.c_fc.weight", {C, 4 * C});
    o.fc_b = add(g, p + "mlp.c_fc.bias", {4 * C});
    o.fcproj_w = add(g, p + "mlp.c_proj.weight", {4 * C, C});
    o.fcproj_b = add(g, p + "mlp.c_proj.bias", {C});
    L.add_group(std::move(g));
  }

  GroupSpec fn{"final_norm", GroupKind::final_norm, -1, {}, 0};
  O.lnf_w = add(fn, "ln_f.weight", {C});
  O.lnf_b = add(fn, "ln_f.bias", {C});
  L.add_group(std::move(fn));
  if (offsets) *offsets = O;
  return L;
}

}  // namespace tz
