// Deterministic GPT-2 parameter initialisation with a self-contained generator (splitmix64 +
// Box-Muller), so runs are reproducible across toolchains.
#include "model/gpt_init.h"

#include <cmath>

namespace tz {
namespace {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1].
  double uniform() { return (double(next() >> 11) + 1.0) * (1.0 / 9007199254740992.0); }
  double normal() {
    double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  std::uint64_t s_;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool is_decayed(const TensorSpec& t) { return t.shape.size() >= 2; }

void init_gpt_group(const GptConfig& cfg, const ParamLayout& layout, std::uint64_t seed, int g,
                    std::vector<float>& values) {
  values.assign(layout.groups[g].count, 0.0f);
  const double residual_std = 0.02 / std::sqrt(2.0 * cfg.n_layer);
  for (const TensorSpec& t : layout.groups[g].tensors) {
    // One generator per tensor, seeded from its name: adding a layer does not shift the others.
    std::uint64_t h = seed ^ 0xcbf29ce484222325ull;
    for (char c : t.name) h = (h ^ std::uint8_t(c)) * 0x100000001b3ull;
    Rng rng(h);
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
    for (std::size_t i = 0; i < n; ++i) p[i] = float(rng.normal() * std);
  }
}

void init_gpt_params(const GptConfig& cfg, const ParamLayout& layout, std::uint64_t seed,
                     std::vector<std::vector<float>>& groups) {
  groups.assign(layout.groups.size(), {});
  for (std::size_t g = 0; g < layout.groups.size(); ++g) init_gpt_group(cfg, layout, seed, int(g), groups[g]);
}

}  // namespace tz
