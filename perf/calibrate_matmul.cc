// The matmul-rate curves: the calibrated model's products at scaled widths and token counts.
#include "perf/calibrate_matmul.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include "core/backend.h"
#include "core/device.h"
#include "core/error.h"
#include "model/model_family.h"
#include "perf/timing.h"

namespace tz {

ModelConfig scaled_width(ModelConfig cfg, double factor) {
  auto scale = [factor](int x) { return std::max(1, int(std::lround(x * factor))); };
  cfg.n_embd = scale(cfg.n_embd);
  if (cfg.ffn_dim > 0) cfg.ffn_dim = scale(cfg.ffn_dim);
  if (cfg.head_dim > 0) cfg.head_dim = scale(cfg.head_dim);
  cfg.validate();
  return cfg;
}

double products_tflops(const ModelConfig& cfg, int B, int T, DType dt, int reps) {
  const std::vector<GemmShape> shapes = model_family(cfg).gemm_shapes(cfg, ModelShape{B, T}, dt);
  auto dev = make_cpu_device();
  Backend& be = dev->backend();
  auto s = dev->create_stream();
  std::size_t in_elems = 0, out_elems = 0;
  for (const GemmShape& g : shapes) {
    in_elems = std::max({in_elems, std::size_t(g.M) * g.K, std::size_t(g.K) * g.N});
    out_elems = std::max(out_elems, std::size_t(g.M) * g.N);
  }
  // Operands of random values in the dtype the products read; C in fp32 or the activation dtype.
  Buffer<float> a32(*dev, in_elems, "calibrate A"), b32(*dev, in_elems, "calibrate B"), c32(*dev, out_elems, "calibrate C");
  std::vector<float> host(in_elems);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  for (float& x : host) x = u(rng);
  be.copy_async(*s, a32.data(), host.data(), a32.bytes());
  be.copy_async(*s, b32.data(), host.data(), b32.bytes());
  Buffer<std::uint16_t> alp, blp, clp;
  CView A = cview(a32.data()), Bv = cview(b32.data());
  if (dt != DType::f32) {
    alp = Buffer<std::uint16_t>(*dev, in_elems, "calibrate A lp");
    blp = Buffer<std::uint16_t>(*dev, in_elems, "calibrate B lp");
    clp = Buffer<std::uint16_t>(*dev, out_elems, "calibrate C lp");
    be.cast(*s, alp.data(), dt, a32.data(), DType::f32, in_elems);
    be.cast(*s, blp.data(), dt, b32.data(), DType::f32, in_elems);
    A = {alp.data(), dt};
    Bv = {blp.data(), dt};
  }
  auto run = [&](const GemmShape& g) {
    const View C = g.out == DType::f32 ? View(c32.data()) : View(clp.data(), g.out);
    be.gemm(*s, g.ta, g.tb, g.M, g.N, g.K, A, Bv, C, Accumulate::no);
    s->synchronize();
  };
  for (const GemmShape& g : shapes) run(g);  // warm-up: oneDNN creates each product's kernel once
  double flops = 0, seconds = 0;
  for (const GemmShape& g : shapes) {
    std::vector<double> t;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = bench::Clock::now();
      run(g);
      t.push_back(std::chrono::duration<double>(bench::Clock::now() - t0).count());
    }
    flops += 2.0 * g.M * g.N * g.K;
    seconds += bench::median(t);
  }
  return flops / seconds / 1e12;
}

MatmulRates measure_matmul_rates(const CalibrateOptions& opt, Communicator* comm) {
  MatmulRates r;
  r.width = opt.model.n_embd;
  const int B = opt.micro_batch, T = opt.seq_len;
  r.tokens = B * T;
  const DType dts[3] = {DType::f32, DType::bf16, DType::f16};
  auto point = [&](const ModelConfig& cfg, int b, int at) {
    if (comm && comm->size() > 1) comm->barrier()->wait();
    RatePoint p;
    p.at = at;
    for (int i = 0; i < 3; ++i) p.tflops[i] = products_tflops(cfg, b, T, dts[i], 3);
    return p;
  };
  const RatePoint here = point(opt.model, B, r.width);
  for (double f : {0.5, 2.0}) {
    const ModelConfig cfg = scaled_width(opt.model, f);
    r.by_width.push_back(point(cfg, B, cfg.n_embd));
  }
  r.by_width.push_back(here);
  // Tokens scaled through the micro-batch (the sequence stays: attention is not a product here); a
  // micro-batch of 1 has no point below it.
  const int half = std::max(1, B / 2);
  RatePoint here_tokens = here;
  here_tokens.at = r.tokens;
  if (half < B) r.by_tokens.push_back(point(opt.model, half, half * T));
  r.by_tokens.push_back(here_tokens);
  r.by_tokens.push_back(point(opt.model, 2 * B, 2 * B * T));
  auto by_at = [](const RatePoint& a, const RatePoint& b) { return a.at < b.at; };
  std::sort(r.by_width.begin(), r.by_width.end(), by_at);
  std::sort(r.by_tokens.begin(), r.by_tokens.end(), by_at);
  return r;
}

}  // namespace tz
