// Matmul benchmark: per case, inputs filled from a hashed tile, warm-up and timed launches on one
// stream, then one unaccumulated product whose sampled elements are checked on the host.
#include "perf/gpu_matmul_bench.h"

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "perf/bench_data.h"
#include "perf/timing.h"

namespace tz {
namespace {

using bench::InputTile;

const char* trans_name(Trans t) { return t == Trans::yes ? "T" : "N"; }

// Element (i, k) of op(A)[M, K] and (k, j) of op(B)[K, N] in their stored layouts.
std::size_t a_index(const GemmShape& g, std::size_t i, std::size_t k) {
  return g.ta == Trans::no ? i * g.K + k : k * g.M + i;
}
std::size_t b_index(const GemmShape& g, std::size_t k, std::size_t j) {
  return g.tb == Trans::no ? k * g.N + j : j * g.K + k;
}

struct CaseResult {
  double ms = 0;
  long long wrong = 0;
  double max_rel_err = 0;
};

CaseResult run_case(Device& dev, Stream& s, InputTile& ta, InputTile& tb, const MatmulCase& c,
                    const GpuMatmulOptions& opt) {
  Backend& be = dev.backend();
  const GemmShape& g = c.shape;
  const DType dt = opt.dtype;
  const std::size_t na = std::size_t(g.M) * g.K, nb = std::size_t(g.K) * g.N, nc = std::size_t(g.M) * g.N;
  Buffer<std::uint8_t> a(dev, na * dtype_size(dt), "matmul A " + c.name),
      b(dev, nb * dtype_size(dt), "matmul B " + c.name);
  Buffer<float> out(dev, nc, "matmul C " + c.name);
  // The planned matmul workspace the training step would give this product (none on cuda).
  Buffer<float> ws;
  if (std::size_t w = gemm_workspace_floats(dev.kind(), dt, g))
    ws = Buffer<float>(dev, w, "matmul workspace");
  be.set_gemm_workspace(ws.empty() ? nullptr : ws.data(), ws.size());
  ta.fill(s, a.data(), dt, na);
  tb.fill(s, b.data(), dt, nb);
  be.memset_async(s, out.data(), 0, out.bytes());
  const CView A{a.data(), dt}, B{b.data(), dt};
  CaseResult r;
  r.ms = bench::ms_per_call(s, opt.warmup, opt.iters, opt.rounds,
                            [&] { be.gemm(s, g.ta, g.tb, g.M, g.N, g.K, A, B, out.data(), c.acc); });

  // The check, outside the timed loop: one product into zeros, 8 elements against a double sum.
  be.gemm(s, g.ta, g.tb, g.M, g.N, g.K, A, B, out.data(), Accumulate::no);
  constexpr int kSamples = 8;
  Buffer<float> got(dev.allocator(MemoryKind::pinned_host), kSamples, "matmul check");
  std::size_t rows[kSamples], cols[kSamples];
  for (int p = 0; p < kSamples; ++p) {
    const float u = bench::hashed_uniform(p, 99) * 0.5f + 0.5f,
                v = bench::hashed_uniform(p, 98) * 0.5f + 0.5f;
    rows[p] = p == 0 ? 0 : p == 1 ? g.M - 1 : std::min<std::size_t>(std::size_t(u * g.M), g.M - 1);
    cols[p] = p == 0 ? 0 : p == 1 ? g.N - 1 : std::min<std::size_t>(std::size_t(v * g.N), g.N - 1);
    be.copy_async(s, got.data() + p, out.data() + rows[p] * g.N + cols[p], sizeof(float));
  }
  s.synchronize();
  be.set_gemm_workspace(nullptr, 0);
  for (int p = 0; p < kSamples; ++p) {
    double want = 0, mag = 0;
    for (int k = 0; k < g.K; ++k) {
      const double x = ta.value(a_index(g, rows[p], k), dt) * tb.value(b_index(g, k, cols[p]), dt);
      want += x;
      mag += std::fabs(x);
    }
    // fp32 accumulation over K terms: a relative error well under 1e-3 of sum |a b| for any order of
    // summation cuBLAS or oneDNN picks; a wrong layout or index is off by the value itself.
    const double err = std::fabs(double(got.data()[p]) - want);
    r.max_rel_err = std::max(r.max_rel_err, mag > 0 ? err / mag : err);
    if (!(err <= 1e-3 * mag + 1e-6)) ++r.wrong;
  }
  return r;
}

}  // namespace

std::vector<MatmulCase> gpt_step_matmuls(int BT, int C, int Vp, int square) {
  auto mk = [](std::string name, Trans ta, Trans tb, int M, int N, int K, Accumulate acc) {
    return MatmulCase{std::move(name), GemmShape{ta, tb, M, N, K}, acc};
  };
  const Trans n = Trans::no, t = Trans::yes;
  const Accumulate no = Accumulate::no, yes = Accumulate::yes;
  return {mk("qkv.fwd", n, n, BT, 3 * C, C, no),       mk("attproj.fwd", n, n, BT, C, C, yes),
          mk("fc.fwd", n, n, BT, 4 * C, C, no),        mk("fcproj.fwd", n, n, BT, C, 4 * C, yes),
          mk("lmhead.fwd", n, t, BT, Vp, C, no),       mk("lmhead.dgrad", n, n, BT, C, Vp, no),
          mk("lmhead.wgrad", t, n, Vp, C, BT, yes),    mk("fcproj.dgrad", n, t, BT, 4 * C, C, no),
          mk("fcproj.wgrad", t, n, 4 * C, C, BT, yes), mk("fc.dgrad", n, t, BT, C, 4 * C, no),
          mk("fc.wgrad", t, n, C, 4 * C, BT, yes),     mk("attproj.dgrad", n, t, BT, C, C, no),
          mk("attproj.wgrad", t, n, C, C, BT, yes),    mk("qkv.dgrad", n, t, BT, C, 3 * C, no),
          mk("qkv.wgrad", t, n, C, 3 * C, BT, yes),    mk("square", n, n, square, square, square, no)};
}

nlohmann::json run_gpu_matmul_bench(Device& dev, const GpuLimits& limits, const GpuMatmulOptions& opt,
                                    bool quiet) {
  TZ_CHECK(opt.iters >= 1 && opt.rounds >= 1 && opt.warmup >= 0, "--iters and --rounds must be at least 1");
  const bool tensor_peak =
      opt.dtype == DType::bf16 || opt.dtype == DType::f16;  // the same peak on every card listed
  const double peak = tensor_peak ? limits.bf16_peak.tflops : 0;
  auto stream = dev.create_stream();
  InputTile tile_a(dev, *stream, 11), tile_b(dev, *stream, 12);
  nlohmann::json out = {
      {"bench", "gpu-matmul"},
      {"device", device_kind_name(dev.kind())},
      {"gpu", limits.gpu.to_json()},
      {"dtype", std::string(dtype_name(opt.dtype))},
      {"accumulate", "fp32"},
      {"peak_tflops", peak > 0 ? nlohmann::json(peak) : nlohmann::json(nullptr)},
      {"peak_source", tensor_peak ? limits.bf16_peak.source : "no peak for this dtype in the table"},
      {"timing", "host clock around " + std::to_string(opt.iters) + " launches + stream synchronize, " +
                     std::to_string(opt.rounds) + " rounds (median), after " + std::to_string(opt.warmup) +
                     " warm-up launches"},
      {"rows", nlohmann::json::array()}};
  if (!quiet)
    std::printf("bench gpu-matmul: %s, %s inputs, fp32 accumulate; limit: %s\n",
                limits.gpu.name.empty() ? device_kind_name(dev.kind()).c_str() : limits.gpu.name.c_str(),
                std::string(dtype_name(opt.dtype)).c_str(),
                peak > 0 ? ("bf16 dense peak " + std::to_string(int(std::lround(peak))) + " TFLOP/s (" +
                            limits.bf16_peak.source + ")")
                               .c_str()
                         : ("none: " + limits.bf16_peak.source).c_str());
  long long wrong = 0;
  double block_flops = 0, block_ms = 0, head_flops = 0, head_ms = 0;
  for (const MatmulCase& c : gpt_step_matmuls(opt.tokens, opt.n_embd, opt.vocab, opt.square)) {
    const CaseResult r = run_case(dev, *stream, tile_a, tile_b, c, opt);
    const GemmShape& g = c.shape;
    const double flops = 2.0 * g.M * g.N * g.K, tflops = flops / (r.ms * 1e-3) / 1e12;
    wrong += r.wrong;
    if (c.name.rfind("lmhead", 0) == 0)
      head_flops += flops, head_ms += r.ms;
    else if (c.name != "square")
      block_flops += flops, block_ms += r.ms;
    nlohmann::json row = {
        {"name", c.name},
        {"trans", std::string(trans_name(g.ta)) + trans_name(g.tb)},
        {"M", g.M},
        {"N", g.N},
        {"K", g.K},
        {"accumulate", c.acc == Accumulate::yes},
        {"ms", r.ms},
        {"tflops", tflops},
        {"fraction_of_peak", peak > 0 ? nlohmann::json(tflops / peak) : nlohmann::json(nullptr)},
        {"wrong", r.wrong},
        {"max_rel_err", r.max_rel_err}};
    out["rows"].push_back(row);
    if (c.name == "square") {
      out["square_tflops"] = tflops;
      out["square_fraction_of_peak"] = row["fraction_of_peak"];
    }
    if (!quiet)
      std::printf(
          "  %-14s %s [%6d x %6d x %6d]%s %9.3f ms %8.1f TFLOP/s %s  #wrong %lld\n", c.name.c_str(),
          row["trans"].get<std::string>().c_str(), g.M, g.N, g.K, c.acc == Accumulate::yes ? " +=" : "   ",
          r.ms, tflops,
          peak > 0 ? (std::to_string(int(std::lround(100 * tflops / peak))) + "% of peak").c_str() : "",
          r.wrong);
  }
  // The rate of one step's products: each block's 12 products run n_layer times, the LM head's 3 once;
  // with n_layer = 48 (gpt2-xl).
  constexpr int kLayers = 48;
  const double step_tflops =
      (kLayers * block_flops + head_flops) / ((kLayers * block_ms + head_ms) * 1e-3) / 1e12;
  out["step_weighted_tflops"] = step_tflops;
  out["step_weighted_fraction_of_peak"] =
      peak > 0 ? nlohmann::json(step_tflops / peak) : nlohmann::json(nullptr);
  out["wrong"] = wrong;
  if (!quiet)
    std::printf(
        "  one step's products (48 blocks + LM head): %.1f TFLOP/s%s; #wrong %lld\n", step_tflops,
        peak > 0 ? (", " + std::to_string(int(std::lround(100 * step_tflops / peak))) + "% of peak").c_str()
                 : "",
        wrong);
  return out;
}

}  // namespace tz
