// Deterministic GPT-2 parameter initialisation with a self-contained generator (splitmix64 +
// Box-Muller), so runs are reproducible across toolchains.
#include "model/gpt_init.h"

#include <cmath>

#include "model/seeded_normal.h"

namespace tz {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void init_gpt_group(const ModelConfig& cfg, const ParamLayout& layout, std::uint64_t seed, int g,
                    std::vector<float>& values) {
  values.assign(layout.groups[g].count, 0.0f);
  const double residual_std = 0.02 / std::sqrt(2.0 * cfg.n_layer);
  for (const TensorSpec& t : layout.groups[g].tensors) {
    // One generator per tensor, seeded from its name: adding a layer does not shift the others.
    const std::uint64_t h = tensor_stream(seed, t.name);
    float* p = values.data() + t.offset;
    if (ends_with(t.name, ".bias")) continue;  // zeros
    if (ends_with(t.name, "ln_1.weight") || ends_with(t.name, "ln_2.weight") || t.name == "ln_f.weight") {
      for (std::size_t i = 0; i < t.count; ++i) p[i] = 1.0f;
      continue;
    }
    double std = 0.02;
    if (ends_with(t.name, "attn.c_proj.weight") || ends_with(t.name, "mlp.c_proj.weight")) std = residual_std;
    std::size_t n = t.count;
    if (t.name == "wte.weight") n = std::size_t(cfg.vocab_size) * cfg.n_embd;  // padded rows stay 0
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < n; ++i) p[i] = float(normal_at(h, i) * std);
  }
}

void init_gpt_params(const ModelConfig& cfg, const ParamLayout& layout, std::uint64_t seed,
                     std::vector<std::vector<float>>& groups) {
  groups.assign(layout.groups.size(), {});
  for (std::size_t g = 0; g < layout.groups.size(); ++g) init_gpt_group(cfg, layout, seed, int(g), groups[g]);
}

}  // namespace tz
