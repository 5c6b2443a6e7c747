#include "model/rope_table.h"

#include <cmath>
#include <numbers>

#include "model/llama_layout.h"

namespace tz {

std::vector<double> rope_inv_freq(const ModelConfig& cfg) {
  const int hd = LlamaDims::of(cfg).hd, half = hd / 2;
  std::vector<double> f(half);
  for (int i = 0; i < half; ++i) f[i] = 1.0 / std::pow(cfg.rope_theta, double(2 * i) / hd);
  if (cfg.rope_factor > 0) {  // transformers' _compute_llama3_parameters
    const double factor = cfg.rope_factor, low = cfg.rope_low_freq_factor, high = cfg.rope_high_freq_factor;
    const double old_len = cfg.rope_original_max_seq_len;
    const double low_wavelen = old_len / low, high_wavelen = old_len / high;
    for (double& x : f) {
      const double wavelen = 2 * std::numbers::pi / x;
      if (wavelen > low_wavelen) {
        x /= factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (old_len / wavelen - low) / (high - low);
        x = (1 - smooth) * x / factor + smooth * x;
      }
    }
  }
  return f;
}

std::vector<float> rope_table(const ModelConfig& cfg, int T) {
  const std::vector<double> f = rope_inv_freq(cfg);
  const std::size_t half = f.size();
  std::vector<float> table(2 * std::size_t(T) * half);
  for (int t = 0; t < T; ++t)
    for (std::size_t i = 0; i < half; ++i) {
      const double angle = double(t) * f[i];
      table[std::size_t(t) * half + i] = float(std::cos(angle));
      table[(std::size_t(T) + t) * half + i] = float(std::sin(angle));
    }
  return table;
}

}  // namespace tz
