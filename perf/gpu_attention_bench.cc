// Attention benchmark: qkv and dout filled from hashed tiles, forward and backward timed apart, a
// finiteness check on both results outside the timed loops.
#include "perf/gpu_attention_bench.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "core/backend.h"
#include "core/error.h"
#include "perf/bench_data.h"
#include "perf/timing.h"

namespace tz {
namespace {

// Whether every element of x (n of `dtype`) is finite (Backend::check_finite writes NaN into the sum
// otherwise); 16-bit values are widened into `wide` first (n floats).
bool all_finite(Device& dev, Stream& s, Buffer<double>& acc, Buffer<double>& host, const void* x, DType dtype,
                std::size_t n, Buffer<float>& wide) {
  Backend& be = dev.backend();
  const float* values = static_cast<const float*>(x);
  if (dtype != DType::f32) {
    be.cast(s, wide.data(), DType::f32, x, dtype, n);
    values = wide.data();
  }
  be.memset_async(s, acc.data(), 0, sizeof(double));
  be.check_finite(s, acc.data(), values, n);
  be.copy_async(s, host.data(), acc.data(), sizeof(double));
  s.synchronize();
  return !std::isnan(host.data()[0]);
}

}  // namespace

nlohmann::json run_gpu_attention_bench(Device& dev, const GpuLimits& limits, const GpuAttentionOptions& opt,
                                       bool quiet) {
  TZ_CHECK(opt.iters >= 1 && opt.rounds >= 1 && opt.warmup >= 0, "--iters and --rounds must be at least 1");
  Backend& be = dev.backend();
  const double peak = limits.bf16_peak.tflops;
  auto stream = dev.create_stream();
  Stream& s = *stream;
  bench::InputTile tile_qkv(dev, s, 21), tile_dout(dev, s, 22);
  Buffer<double> acc(dev, 1, "finite check"),
      host(dev.allocator(MemoryKind::pinned_host), 1, "finite check readback");
  nlohmann::json out = {{"bench", "gpu-attention"},
                        {"device", device_kind_name(dev.kind())},
                        {"gpu", limits.gpu.to_json()},
                        {"peak_tflops", peak > 0 ? nlohmann::json(peak) : nlohmann::json(nullptr)},
                        {"peak_source", limits.bf16_peak.source},
                        {"flops_convention",
                         "FlashAttention-2's: causal forward 4 * B * NH * T^2 * hs / 2 (QK^T and PV, half "
                         "the square), backward 2.5x "
                         "forward (5 products)"},
                        {"activations", std::string(dtype_name(opt.act)) +
                                            " qkv, out, dout, dqkv (as Backend::attention_* take them)"},
                        {"rows", nlohmann::json::array()}};
  if (!quiet)
    std::printf(
        "bench gpu-attention: %s, causal, %s activations; FLOPs as FlashAttention-2 counts them; limit: "
        "%s\n",
        limits.gpu.name.empty() ? device_kind_name(dev.kind()).c_str() : limits.gpu.name.c_str(),
        std::string(dtype_name(opt.act)).c_str(),
        peak > 0 ? ("bf16 dense peak " + std::to_string(int(std::lround(peak))) + " TFLOP/s").c_str()
                 : ("none: " + limits.bf16_peak.source).c_str());
  bool finite = true;
  for (const GpuAttentionShape& sh : opt.shapes) {
    TZ_CHECK(sh.B > 0 && sh.T > 0 && sh.NH > 0 && sh.C % sh.NH == 0, "attention shape B=", sh.B, " T=", sh.T,
             " C=", sh.C, " NH=", sh.NH, ": C must be a multiple of NH and every size positive");
    const std::size_t BT = std::size_t(sh.B) * sh.T;
    const AttentionShape a = AttentionShape::multi_head(sh.B, sh.T, sh.C, sh.NH);
    const std::size_t es = dtype_size(opt.act), n_qkv = BT * 3 * sh.C, n_out = BT * sh.C;
    Buffer<std::uint8_t> qkv(dev, n_qkv * es, "attention qkv"), o(dev, n_out * es, "attention out"),
        dout(dev, n_out * es, "attention dout"), dqkv(dev, n_qkv * es, "attention dqkv");
    Buffer<float> saved(dev, attention_saved_floats(dev.kind(), a, opt.act), "attention saved"),
        scratch(dev, attention_scratch_floats(dev.kind(), a, opt.act), "attention scratch"),
        wide(dev, opt.act == DType::f32 ? 1 : n_qkv, "finite check widening");
    tile_qkv.fill(s, qkv.data(), opt.act, n_qkv);
    tile_dout.fill(s, dout.data(), opt.act, n_out);
    const View out_v{o.data(), opt.act}, dqkv_v{dqkv.data(), opt.act};
    const CView qkv_v{qkv.data(), opt.act}, dout_v{dout.data(), opt.act}, o_v{o.data(), opt.act};
    const double fwd_ms = bench::ms_per_call(s, opt.warmup, opt.iters, opt.rounds, [&] {
      be.attention_forward(s, out_v, saved.data(), scratch.data(), qkv_v, a);
    });
    // Backward reads the last forward's out and saved rows, which every forward above wrote alike.
    const double bwd_ms = bench::ms_per_call(s, opt.warmup, opt.iters, opt.rounds, [&] {
      be.attention_backward(s, dqkv_v, scratch.data(), dout_v, qkv_v, o_v, saved.data(), a);
    });
    const bool ok = all_finite(dev, s, acc, host, o.data(), opt.act, n_out, wide) &&
                    all_finite(dev, s, acc, host, dqkv.data(), opt.act, n_qkv, wide);
    finite = finite && ok;
    const int hs = sh.C / sh.NH;
    const double ff = causal_attention_forward_flops(sh.B, sh.NH, sh.T, hs),
                 bf = causal_attention_backward_flops(sh.B, sh.NH, sh.T, hs);
    const double fwd_t = ff / (fwd_ms * 1e-3) / 1e12, bwd_t = bf / (bwd_ms * 1e-3) / 1e12,
                 both_t = (ff + bf) / ((fwd_ms + bwd_ms) * 1e-3) / 1e12;
    auto frac = [&](double t) { return peak > 0 ? nlohmann::json(t / peak) : nlohmann::json(nullptr); };
    out["rows"].push_back({{"B", sh.B},
                           {"T", sh.T},
                           {"C", sh.C},
                           {"NH", sh.NH},
                           {"head_size", hs},
                           {"forward_ms", fwd_ms},
                           {"backward_ms", bwd_ms},
                           {"forward_tflops", fwd_t},
                           {"backward_tflops", bwd_t},
                           {"tflops", both_t},
                           {"forward_fraction_of_peak", frac(fwd_t)},
                           {"backward_fraction_of_peak", frac(bwd_t)},
                           {"fraction_of_peak", frac(both_t)},
                           {"finite", ok}});
    if (!quiet) {
      auto pct = [&](double t) {
        return peak > 0 ? " (" + std::to_string(int(std::lround(100 * t / peak))) + "% of peak)"
                        : std::string();
      };
      std::printf(
          "  B=%d T=%d C=%d NH=%d (hs %d): forward %.3f ms %.1f TFLOP/s%s | backward %.3f ms %.1f TFLOP/s%s "
          "| "
          "both %.1f TFLOP/s%s | finite: %s\n",
          sh.B, sh.T, sh.C, sh.NH, hs, fwd_ms, fwd_t, pct(fwd_t).c_str(), bwd_ms, bwd_t, pct(bwd_t).c_str(),
          both_t, pct(both_t).c_str(), ok ? "yes" : "NO");
    }
  }
  out["finite"] = finite;
  return out;
}

}  // namespace tz
