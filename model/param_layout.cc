// Builds the flat-group layout of GPT-2's parameters with Hugging Face names and shapes.
#include "model/param_layout.h"

#include "core/error.h"

namespace tz {
namespace {

std::size_t align_up(std::size_t n) { return (n + kTensorAlign - 1) / kTensorAlign * kTensorAlign; }

std::size_t add(GroupSpec& g, std::string name, std::vector<std::int64_t> shape, std::vector<std::int64_t> hf = {}) {
  TensorSpec t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.hf_shape = hf.empty() ? t.shape : std::move(hf);
  t.count = 1;
  for (auto d : t.shape) t.count *= std::size_t(d);
  t.decay = t.shape.size() >= 2;
  t.offset = g.count;
  g.count = align_up(g.count + t.count);
  g.tensors.push_back(std::move(t));
  return g.tensors.back().offset;
}

}  // namespace

ParamLayout ParamLayout::build(const GptConfig& cfg) {
  cfg.validate();
  ParamLayout L;
  const std::int64_t C = cfg.n_embd;

  GroupSpec emb{"embedding", GroupKind::embedding, -1, {}, 0};
  L.wte_offset = add(emb, "wte.weight", {cfg.padded_vocab_size, C}, {cfg.vocab_size, C});
  L.wpe_offset = add(emb, "wpe.weight", {cfg.max_seq_len, C});
  L.groups.push_back(std::move(emb));

  for (int l = 0; l < cfg.n_layer; ++l) {
    std::string p = "h." + std::to_string(l) + ".";
    GroupSpec g{"block." + std::to_string(l), GroupKind::block, l, {}, 0};
    BlockOffsets o;
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
    L.block = o;
    L.groups.push_back(std::move(g));
  }

  GroupSpec fn{"final_norm", GroupKind::final_norm, -1, {}, 0};
  L.lnf_w_offset = add(fn, "ln_f.weight", {C});
  L.lnf_b_offset = add(fn, "ln_f.bias", {C});
  L.groups.push_back(std::move(fn));

  for (auto& g : L.groups) L.total += g.count;
  return L;
}

const TensorSpec* ParamLayout::find(const std::string& name, int* group) const {
  std::string n = name.rfind("transformer.", 0) == 0 ? name.substr(12) : name;
  for (std::size_t gi = 0; gi < groups.size(); ++gi)
    for (auto& t : groups[gi].tensors)
      if (t.name == n) {
        if (group) *group = int(gi);
        return &t;
      }
  return nullptr;
}

}  // namespace tz
