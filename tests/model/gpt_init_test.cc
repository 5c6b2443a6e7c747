// Tests model/gpt_init.h: the initial values are the stateful splitmix64 + Box-Muller sequence of each
// tensor (the generator's definition, written here independently), bit for bit, whether the tensor is
// filled by one thread or several.
#include "model/gpt_init.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tz {
namespace {

// The sequential generator: one state advanced by the golden gamma per draw.
struct SequentialRng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return (double(next() >> 11) + 1.0) * (1.0 / 9007199254740992.0); }
  double normal() {
    const double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

std::uint64_t name_seed(std::uint64_t seed, const std::string& name) {
  std::uint64_t h = seed ^ 0xcbf29ce484222325ull;
  for (char c : name) h = (h ^ std::uint8_t(c)) * 0x100000001b3ull;
  return h;
}

TEST(GptInit, EveryRandomTensorIsTheSequentialGeneratorsSequenceWithOneOrFourThreads) {
  ModelConfig cfg = model_preset("tiny");
  const ParamLayout layout = ParamLayout::build(cfg);
  const int saved = omp_get_max_threads();
  for (int threads : {1, 4}) {
    omp_set_num_threads(threads);
    for (int g = 0; g < int(layout.groups.size()); ++g) {
      std::vector<float> values;
      init_gpt_group(cfg, layout, 1337, g, values);
      for (const TensorSpec& t : layout.groups[g].tensors) {
        if (t.shape.size() < 2) continue;  // biases (zeros) and LayerNorm weights (ones)
        const bool residual = t.name.find("c_proj.weight") != std::string::npos;
        const double std = residual ? 0.02 / std::sqrt(2.0 * cfg.n_layer) : 0.02;
        const std::size_t n = t.name == "wte.weight" ? std::size_t(cfg.vocab_size) * cfg.n_embd : t.count;
        SequentialRng rng{name_seed(1337, t.name)};
        for (std::size_t i = 0; i < n; ++i) {
          const float want = float(rng.normal() * std);
          ASSERT_EQ(std::memcmp(&values[t.offset + i], &want, sizeof want), 0)
              << t.name << " element " << i << " with " << threads << " threads";
        }
        for (std::size_t i = n; i < t.count; ++i) ASSERT_EQ(values[t.offset + i], 0.0f) << t.name << " padding";
      }
    }
  }
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace tz
