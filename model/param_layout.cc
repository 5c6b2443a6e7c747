// The flat-group layout's building blocks and look-ups; each family builds its own from them.
#include "model/param_layout.h"

#include "core/error.h"
#include "model/model_family.h"

namespace tz {

std::size_t add_tensor(GroupSpec& g, std::string name, std::string hf_name, std::vector<std::int64_t> shape,
                       std::vector<std::int64_t> hf_shape, bool decay, bool packed) {
  TensorSpec t;
  t.name = std::move(name);
  t.hf_name = std::move(hf_name);
  t.shape = std::move(shape);
  t.hf_shape = hf_shape.empty() ? t.shape : std::move(hf_shape);
  t.count = 1;
  for (auto d : t.shape) t.count *= std::size_t(d);
  t.decay = decay;
  t.packed = packed;
  const bool follows_packed = !g.tensors.empty() && g.tensors.back().packed;
  if (t.count >= kBlockAlignElements && !follows_packed)
    g.count = (g.count + kBlockAlign - 1) / kBlockAlign * kBlockAlign;
  t.offset = g.count;
  g.count += t.count;
  if (!packed) g.count = (g.count + kTensorAlign - 1) / kTensorAlign * kTensorAlign;
  g.tensors.push_back(std::move(t));
  return g.tensors.back().offset;
}

void ParamLayout::add_group(GroupSpec g) {
  total += g.count;
  groups.push_back(std::move(g));
}

ParamLayout ParamLayout::build(const ModelConfig& cfg) { return model_family(cfg).layout(cfg); }

std::vector<int> ParamLayout::backward_order() const {
  std::vector<int> order{final_norm_group()};
  for (int l = int(groups.size()) - 3; l >= 0; --l) order.push_back(block_group(l));
  order.push_back(embedding_group());
  return order;
}

const TensorSpec* ParamLayout::find(const std::string& name, int* group) const {
  for (std::size_t gi = 0; gi < groups.size(); ++gi)
    for (auto& t : groups[gi].tensors)
      if (t.name == name) {
        if (group) *group = int(gi);
        return &t;
      }
  return nullptr;
}

}  // namespace tz
