// Deterministic GPT-2 parameter initialisation with a self-contained generator (splitmix64 +
// Box-Muller), so runs are reproducible across toolchains.
#include "model/gpt_init.h"

#include <cmath>

namespace tz {
namespace {

// splitmix64's k-th output (k >= 1) from seed s: a counter-based generator, so element i of a tensor (the
// normal made of draws 2i+1 and 2i+2) is computed on its own and the tensor is filled in parallel with
// the same bits as in sequence.
std::uint64_t splitmix(std::uint64_t s, std::uint64_t k) {
  std::uint64_t z = s + k * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in (0, 1].
double uniform(std::uint64_t bits) { return (double(bits >> 11) + 1.0) * (1.0 / 9007199254740992.0); }

// Box-Muller on draws 2i+1 and 2i+2.
double normal_at(std::uint64_t s, std::size_t i) {
  const double u1 = uniform(splitmix(s, 2 * std::uint64_t(i) + 1)), u2 = uniform(splitmix(s, 2 * std::uint64_t(i) + 2));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

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
    std::uint64_t h = seed ^ 0xcbf29ce484222325ull;
    for (char c : t.name) h = (h ^ std::uint8_t(c)) * 0x100000001b3ull;
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
