// A plain double-precision GPT-2 forward written independently of model/gpt.cc (straight loops, no
// fusion), used as the reference for the model's loss and, through finite differences, its gradients.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "model/gpt_layout.h"

namespace tz::testing {

struct RefGpt {
  const ModelConfig& cfg;
  const ParamLayout& layout;

  // params[g] holds group g in the layout's order; returns the mean cross-entropy over B*T positions.
  double loss(const std::vector<std::vector<double>>& params, const std::vector<std::int32_t>& in,
              const std::vector<std::int32_t>& tgt, int B, int T) const {
    const int C = cfg.n_embd, NH = cfg.n_head, hs = C / NH, V = cfg.vocab_size;
    const GptOffsets off = gpt_offsets(cfg);
    const auto& emb = params[0];
    double total = 0;
    for (int b = 0; b < B; ++b) {
      std::vector<std::vector<double>> x(T, std::vector<double>(C));
      for (int t = 0; t < T; ++t)
        for (int c = 0; c < C; ++c)
          x[t][c] = emb[off.wte + std::size_t(in[b * T + t]) * C + c] +
                    emb[off.wpe + t * C + c];
      for (int l = 0; l < cfg.n_layer; ++l) {
        const auto& p = params[1 + l];
        const BlockOffsets& o = off.block;
        auto h = layernorm(x, p, o.ln1_w, o.ln1_b);
        auto qkv = linear(h, p, o.qkv_w, o.qkv_b, C, 3 * C);
        std::vector<std::vector<double>> y(T, std::vector<double>(C, 0.0));
        for (int hd = 0; hd < NH; ++hd)
          for (int t = 0; t < T; ++t) {
            std::vector<double> s(t + 1);
            double mx = -1e300;
            for (int u = 0; u <= t; ++u) {
              double d = 0;
              for (int i = 0; i < hs; ++i) d += qkv[t][hd * hs + i] * qkv[u][C + hd * hs + i];
              s[u] = d / std::sqrt(double(hs));
              mx = std::max(mx, s[u]);
            }
            double z = 0;
            for (int u = 0; u <= t; ++u) z += (s[u] = std::exp(s[u] - mx));
            for (int u = 0; u <= t; ++u)
              for (int i = 0; i < hs; ++i) y[t][hd * hs + i] += s[u] / z * qkv[u][2 * C + hd * hs + i];
          }
        auto a = linear(y, p, o.attproj_w, o.attproj_b, C, C);
        for (int t = 0; t < T; ++t)
          for (int c = 0; c < C; ++c) x[t][c] += a[t][c];
        auto h2 = layernorm(x, p, o.ln2_w, o.ln2_b);
        auto f = linear(h2, p, o.fc_w, o.fc_b, C, 4 * C);
        for (auto& row : f)
          for (auto& v : row) v = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        auto m = linear(f, p, o.fcproj_w, o.fcproj_b, 4 * C, C);
        for (int t = 0; t < T; ++t)
          for (int c = 0; c < C; ++c) x[t][c] += m[t][c];
      }
      const auto& pf = params.back();
      auto xf = layernorm(x, pf, off.lnf_w, off.lnf_b);
      for (int t = 0; t < T; ++t) {
        std::vector<double> logit(V);
        double mx = -1e300;
        for (int v = 0; v < V; ++v) {
          double d = 0;
          for (int c = 0; c < C; ++c) d += xf[t][c] * emb[off.wte + std::size_t(v) * C + c];
          logit[v] = d;
          mx = std::max(mx, d);
        }
        double z = 0;
        for (int v = 0; v < V; ++v) z += std::exp(logit[v] - mx);
        total += -(logit[tgt[b * T + t]] - mx - std::log(z));
      }
    }
    return total / (B * T);
  }

 private:
  std::vector<std::vector<double>> layernorm(const std::vector<std::vector<double>>& x,
                                             const std::vector<double>& p, std::size_t w,
                                             std::size_t b) const {
    const int C = cfg.n_embd;
    std::vector<std::vector<double>> out(x.size(), std::vector<double>(C));
    for (std::size_t t = 0; t < x.size(); ++t) {
      double mean = 0, var = 0;
      for (double v : x[t]) mean += v;
      mean /= C;
      for (double v : x[t]) var += (v - mean) * (v - mean);
      var /= C;
      for (int c = 0; c < C; ++c) out[t][c] = (x[t][c] - mean) / std::sqrt(var + 1e-5) * p[w + c] + p[b + c];
    }
    return out;
  }

  // Conv1D as Hugging Face stores it: W is [in, out].
  std::vector<std::vector<double>> linear(const std::vector<std::vector<double>>& x,
                                          const std::vector<double>& p, std::size_t w, std::size_t b, int in,
                                          int out) const {
    std::vector<std::vector<double>> y(x.size(), std::vector<double>(out));
    for (std::size_t t = 0; t < x.size(); ++t)
      for (int o = 0; o < out; ++o) {
        double s = p[b + o];
        for (int i = 0; i < in; ++i) s += x[t][i] * p[w + std::size_t(i) * out + o];
        y[t][o] = s;
      }
    return y;
  }
};

}  // namespace tz::testing
