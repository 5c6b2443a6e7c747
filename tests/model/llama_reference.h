// A plain double-precision Llama-family forward written independently of model/llama.cc and
// model/rope_table.cc (straight loops over Hugging Face's tensors, found by name; no packing, no
// fusion), as transformers' LlamaForCausalLM computes it: the reference for the model's loss and,
// through finite differences, its gradients.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <vector>

#include "model/llama_layout.h"

namespace tz::testing {

using Rows = std::vector<std::vector<double>>;

// LlamaRotaryEmbedding's inverse frequencies (default, or rope_type "llama3").
inline std::vector<double> ref_inv_freq(const ModelConfig& cfg) {
  const int hd = LlamaDims::of(cfg).hd;
  std::vector<double> f;
  for (int i = 0; i < hd; i += 2) {
    double x = 1.0 / std::pow(cfg.rope_theta, double(i) / hd);
    if (cfg.rope_factor > 0) {
      const double low_wl = cfg.rope_original_max_seq_len / cfg.rope_low_freq_factor;
      const double high_wl = cfg.rope_original_max_seq_len / cfg.rope_high_freq_factor;
      const double wl = 2 * std::numbers::pi / x;
      const double scaled = wl > low_wl ? x / cfg.rope_factor : x;
      const double smooth = (cfg.rope_original_max_seq_len / wl - cfg.rope_low_freq_factor) /
                            (cfg.rope_high_freq_factor - cfg.rope_low_freq_factor);
      const bool medium = !(wl < high_wl) && !(wl > low_wl);
      x = medium ? (1 - smooth) * scaled / cfg.rope_factor + smooth * scaled : scaled;
    }
    f.push_back(x);
  }
  return f;
}

struct RefLlama {
  const ModelConfig& cfg;
  const ParamLayout& layout;

  const double* w(const std::vector<std::vector<double>>& params, const std::string& name) const {
    int g = -1;
    const TensorSpec* t = layout.find(name, &g);
    if (!t) throw std::runtime_error("reference: no tensor " + name);
    return params[g].data() + t->offset;
  }

  // params[g] holds group g; returns the mean cross-entropy over B*T positions.
  double loss(const std::vector<std::vector<double>>& params, const std::vector<std::int32_t>& in,
              const std::vector<std::int32_t>& tgt, int B, int T) const {
    const LlamaDims d = LlamaDims::of(cfg);
    const int C = d.C, H = d.H, KV = d.KV, hd = d.hd, I = d.I, V = cfg.vocab_size, G = H / KV;
    const std::vector<double> inv_freq = ref_inv_freq(cfg);
    const double* embed = w(params, "model.embed_tokens.weight");
    const double* head = cfg.tied_head ? embed : w(params, "lm_head.weight");
    double total = 0;
    for (int b = 0; b < B; ++b) {
      Rows x(T, std::vector<double>(C));
      for (int t = 0; t < T; ++t)
        for (int c = 0; c < C; ++c) x[t][c] = embed[std::size_t(in[b * T + t]) * C + c];
      for (int l = 0; l < cfg.n_layer; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        auto bias = [&](const char* n) { return has(p + n) ? w(params, p + n) : nullptr; };
        Rows h = rmsnorm(x, w(params, p + "input_layernorm.weight"));
        Rows q = linear(h, w(params, p + "self_attn.q_proj.weight"), bias("self_attn.q_proj.bias"), C, H * hd);
        Rows k = linear(h, w(params, p + "self_attn.k_proj.weight"), bias("self_attn.k_proj.bias"), C, KV * hd);
        Rows v = linear(h, w(params, p + "self_attn.v_proj.weight"), bias("self_attn.v_proj.bias"), C, KV * hd);
        rotate(q, H, hd, inv_freq);
        rotate(k, KV, hd, inv_freq);
        Rows y(T, std::vector<double>(H * hd, 0.0));
        for (int hq = 0; hq < H; ++hq) {
          const int kv = hq / G;
          for (int t = 0; t < T; ++t) {
            std::vector<double> s(t + 1);
            double mx = -1e300;
            for (int u = 0; u <= t; ++u) {
              double dot = 0;
              for (int i = 0; i < hd; ++i) dot += q[t][hq * hd + i] * k[u][kv * hd + i];
              s[u] = dot / std::sqrt(double(hd));
              mx = std::max(mx, s[u]);
            }
            double z = 0;
            for (int u = 0; u <= t; ++u) z += (s[u] = std::exp(s[u] - mx));
            for (int u = 0; u <= t; ++u)
              for (int i = 0; i < hd; ++i) y[t][hq * hd + i] += s[u] / z * v[u][kv * hd + i];
          }
        }
        Rows o = linear(y, w(params, p + "self_attn.o_proj.weight"), bias("self_attn.o_proj.bias"), H * hd, C);
        for (int t = 0; t < T; ++t)
          for (int c = 0; c < C; ++c) x[t][c] += o[t][c];
        Rows h2 = rmsnorm(x, w(params, p + "post_attention_layernorm.weight"));
        Rows gate = linear(h2, w(params, p + "mlp.gate_proj.weight"), bias("mlp.gate_proj.bias"), C, I);
        Rows up = linear(h2, w(params, p + "mlp.up_proj.weight"), bias("mlp.up_proj.bias"), C, I);
        for (int t = 0; t < T; ++t)
          for (int i = 0; i < I; ++i) gate[t][i] = gate[t][i] / (1 + std::exp(-gate[t][i])) * up[t][i];
        Rows m = linear(gate, w(params, p + "mlp.down_proj.weight"), bias("mlp.down_proj.bias"), I, C);
        for (int t = 0; t < T; ++t)
          for (int c = 0; c < C; ++c) x[t][c] += m[t][c];
      }
      Rows xf = rmsnorm(x, w(params, "model.norm.weight"));
      for (int t = 0; t < T; ++t) {
        std::vector<double> logit(V);
        double mx = -1e300;
        for (int vv = 0; vv < V; ++vv) {
          double dot = 0;
          for (int c = 0; c < C; ++c) dot += xf[t][c] * head[std::size_t(vv) * C + c];
          logit[vv] = dot;
          mx = std::max(mx, dot);
        }
        double z = 0;
        for (int vv = 0; vv < V; ++vv) z += std::exp(logit[vv] - mx);
        total += -(logit[tgt[b * T + t]] - mx - std::log(z));
      }
    }
    return total / (B * T);
  }

 private:
  bool has(const std::string& name) const { return layout.find(name) != nullptr; }

  Rows rmsnorm(const Rows& x, const double* wt) const {
    Rows out(x.size(), std::vector<double>(x[0].size()));
    for (std::size_t t = 0; t < x.size(); ++t) {
      double ms = 0;
      for (double v : x[t]) ms += v * v;
      ms /= double(x[t].size());
      for (std::size_t c = 0; c < x[t].size(); ++c) out[t][c] = x[t][c] / std::sqrt(ms + cfg.norm_eps) * wt[c];
    }
    return out;
  }

  // nn.Linear: W is [out, in].
  static Rows linear(const Rows& x, const double* wt, const double* b, int in, int out) {
    Rows y(x.size(), std::vector<double>(out));
    for (std::size_t t = 0; t < x.size(); ++t)
      for (int o = 0; o < out; ++o) {
        double s = b ? b[o] : 0.0;
        for (int i = 0; i < in; ++i) s += x[t][i] * wt[std::size_t(o) * in + i];
        y[t][o] = s;
      }
    return y;
  }

  // apply_rotary_pos_emb: x * cos + rotate_half(x) * sin, position t, frequencies repeated over halves.
  static void rotate(Rows& x, int heads, int hd, const std::vector<double>& inv_freq) {
    for (std::size_t t = 0; t < x.size(); ++t)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < hd / 2; ++i) {
          const double a = double(t) * inv_freq[i], c = std::cos(a), s = std::sin(a);
          double& x1 = x[t][h * hd + i];
          double& x2 = x[t][h * hd + i + hd / 2];
          const double r1 = x1 * c - x2 * s, r2 = x2 * c + x1 * s;
          x1 = r1;
          x2 = r2;
        }
  }
};

}  // namespace tz::testing
