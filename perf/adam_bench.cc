// Adam benchmark: every pass runs on the same buffers, interleaved repetition by repetition so that a
// change in the shared machine's load hits all passes alike; the bit check runs once, after timing.
#include "perf/timing.h"
#include "perf/adam_bench.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/elementwise.h"
#include "core/error.h"

namespace tz {
namespace {

using bench::Clock;
using bench::median;

// Uniform in [-1, 1) from the index (splitmix64's finaliser), so the threads fill 1.8 GB in parallel
// and the inputs do not depend on the thread count.
float hashed_uniform(std::uint64_t i, std::uint64_t seed) {
  std::uint64_t z = i * 0x9e3779b97f4a7c15ull + seed;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return float(double(z >> 40) * (2.0 / 16777216.0) - 1.0);
}

enum class Kind { access_pattern, adamw };

struct Pass {
  const char* key;    // JSON name
  const char* label;  // table row
  Kind kind;
  std::optional<DType> working;  // the working copy it writes (bf16 or fp16), if any
  std::function<void()> run;

  double bytes_per_param() const { return kAdamBytesPerParam + (working ? dtype_size(*working) : 0); }
};

// The elements the bit check looks at: the start of the shard (several chunks) and its ragged end.
std::vector<std::size_t> sample_indices(std::size_t n) {
  const std::size_t head = std::min<std::size_t>(n, 1 << 18), tail = std::min<std::size_t>(n - head, 4099);
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < head; ++i) idx.push_back(i);
  for (std::size_t i = n - tail; i < n; ++i) idx.push_back(i);
  return idx;
}

}  // namespace

nlohmann::json run_adam_bench(const AdamBenchOptions& opt, bool quiet) {
  const std::size_t n = opt.params;
  TZ_CHECK(n >= 1, "--params must be at least 1");
  TZ_CHECK(opt.reps >= 1 && opt.warmup_reps >= 0, "--reps must be at least 1 and --warmup-reps at least 0");
  const CpuAdamIsa isa = opt.isa ? *opt.isa : cpu_adam_isa_choice();
  TZ_CHECK(cpu_adam_isa_supported(isa), "this CPU cannot run the ", cpu_adam_isa_name(isa), " CPU Adam path");
  const int threads = omp_get_max_threads();
  if (opt.threads > 0 && opt.threads != threads)
    std::fprintf(stderr,
                 "bench adam: --threads %d is informational; OpenMP runs %d threads (set OMP_NUM_THREADS)\n",
                 opt.threads, threads);

  auto dev = make_cpu_device();
  Buffer<float> p(*dev, n, "adam bench p"), m(*dev, n, "adam bench m"), v(*dev, n, "adam bench v"),
      g(*dev, n, "adam bench g");
  Buffer<std::uint16_t> w(*dev, n, "adam bench working");
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    p[i] = hashed_uniform(i, 1);
    g[i] = 1e-2f * hashed_uniform(i, 2);
    m[i] = 0;
    v[i] = 0;
    w[i] = 0;
  }

  AdamStep st;
  st.lr = 1e-4f;
  st.weight_decay = 0.01f;
  st.step = 0;
  auto adam = [&](void* working, DType type) {
    return [&, working, type] {
      ++st.step;
      cpu_adamw_with(isa, p.data(), m.data(), v.data(), g.data(), n, st, working, type);
    };
  };
  Backend& core = dev->backend();
  std::vector<Pass> passes = {
      {"limit", "limit: access pattern, no math", Kind::access_pattern, std::nullopt,
       [&] { cpu_adam_memory_pass(isa, p.data(), m.data(), v.data(), g.data(), n); }},
      {"adamw", "adamw", Kind::adamw, std::nullopt, adam(nullptr, DType::bf16)},
      {"adamw_bf16", "adamw + bf16 working write", Kind::adamw, DType::bf16, adam(w.data(), DType::bf16)},
      {"adamw_fp16", "adamw + fp16 working write", Kind::adamw, DType::f16, adam(w.data(), DType::f16)},
  };
  if (opt.core_backend)
    // The generic loop the CPU backend runs on the device: the baseline. It rounds as the reference
    // does (core is built with -ffp-contract=off too), so it is bit-checked like the others.
    passes.push_back({"core_backend_bf16", "core backend adamw + bf16 write", Kind::adamw, DType::bf16, [&] {
                        ++st.step;
                        core.adamw(p.data(), m.data(), v.data(), g.data(), n, st, w.data(), DType::bf16);
                      }});

  if (!quiet)
    std::printf(
        "bench adam: %.1fM params, %d threads, isa %s, %d warm-up + %d timed reps of each pass, interleaved\n"
        "  bytes per param: 28 (read p, g, m, v; write p, m, v), +2 with a 16-bit working write; GB = 1e9 B\n"
        "  ms/step: median; of limit and ratios: medians of per-rep ratios between passes run back to back\n",
        n / 1e6, threads, std::string(cpu_adam_isa_name(isa)).c_str(), opt.warmup_reps, opt.reps);

  std::vector<std::vector<double>> ms(passes.size());
  for (int r = 0; r < opt.warmup_reps + opt.reps; ++r) {
    for (std::size_t k = 0; k < passes.size(); ++k) {
      const auto t0 = Clock::now();
      passes[k].run();
      const auto t1 = Clock::now();
      if (r >= opt.warmup_reps) ms[k].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
  }

  // The check, outside the timed loop: one more run of each pass against the scalar reference on a
  // sample of elements (the limit pass must leave them unchanged). Counts elements whose p, m, v or
  // working copy differ in any bit.
  const std::vector<std::size_t> idx = sample_indices(n);
  std::vector<long long> wrong(passes.size());
  for (std::size_t k = 0; k < passes.size(); ++k) {
    Pass& pass = passes[k];
    std::vector<float> rp(idx.size()), rm(idx.size()), rv(idx.size());
    for (std::size_t j = 0; j < idx.size(); ++j) {
      rp[j] = p[idx[j]];
      rm[j] = m[idx[j]];
      rv[j] = v[idx[j]];
    }
    pass.run();
    const math::AdamCoeffs c = adam_coeffs(st);  // st.step is the step pass.run() just took
    long long bad = 0;
    for (std::size_t j = 0; j < idx.size(); ++j) {
      const std::size_t i = idx[j];
      if (pass.kind == Kind::adamw) math::adamw_update(rp[j], rm[j], rv[j], g[i], c);
      bool ok = float_bits(p[i]) == float_bits(rp[j]) && float_bits(m[i]) == float_bits(rm[j]) &&
                float_bits(v[i]) == float_bits(rv[j]);
      if (pass.working) {
        const std::uint16_t want =
            *pass.working == DType::bf16 ? float_to_bf16(rp[j]).bits : float_to_fp16(rp[j]).bits;
        ok = ok && w[i] == want;
      }
      bad += !ok;
    }
    wrong[k] = bad;
  }

  nlohmann::json out;
  out["bench"] = "adam";
  out["params"] = n;
  out["threads"] = threads;
  if (opt.threads > 0) out["threads_requested"] = opt.threads;
  out["isa"] = cpu_adam_isa_name(isa);
  out["warmup_reps"] = opt.warmup_reps;
  out["reps"] = opt.reps;
  out["checked_elements"] = idx.size();
  out["bytes_formula"] = "params * (28 + working bytes): read p, g, m, v; write p, m, v; write working copy";
  // Ratios are medians of per-repetition ratios between passes run back to back: the machine's
  // memory bandwidth drifts with its neighbours' load (2x within minutes), and pairing cancels most of it.
  auto paired = [&](std::size_t a, std::size_t b) {  // median over reps of time(a) / time(b)
    std::vector<double> r;
    for (std::size_t i = 0; i < ms[a].size(); ++i) r.push_back(ms[a][i] / ms[b][i]);
    return median(r);
  };
  if (!quiet) std::printf("  %-34s %9s %8s %9s %7s\n", "pass", "ms/step", "GB/s", "of limit", "#wrong");
  for (std::size_t k = 0; k < passes.size(); ++k) {
    const double t = median(ms[k]);
    const double gbs = n * passes[k].bytes_per_param() / (t * 1e-3) / 1e9;
    // GB/s as a fraction of the limit pass's, from the paired time ratio.
    const double fraction = paired(0, k) * passes[k].bytes_per_param() / passes[0].bytes_per_param();
    nlohmann::json row;
    row["ms_per_step"] = t;
    row["ms_all"] = ms[k];
    row["bytes_per_param"] = passes[k].bytes_per_param();
    row["gb_per_s"] = gbs;
    row["fraction_of_limit"] = fraction;
    row["wrong"] = wrong[k];
    out[passes[k].key] = row;
    if (!quiet) {
      std::printf("  %-34s %9.2f %8.2f %8.1f%% %7lld\n", passes[k].label, t, gbs, 100.0 * fraction, wrong[k]);
    }
  }
  // passes[1] is the plain step, passes[2] the step with the bf16 write.
  const double bf16_overhead = paired(2, 1) - 1.0;
  out["bf16_write_overhead"] = bf16_overhead;
  if (opt.core_backend) out["speedup_over_core_backend_bf16"] = paired(passes.size() - 1, 2);
  if (!quiet) {
    std::printf("  bf16 working write: %+.1f%% time over the plain step (%+.1f%% bytes)\n",
                100.0 * bf16_overhead, 100.0 * 2.0 / kAdamBytesPerParam);
    if (opt.core_backend)
      std::printf("  speed-up over the core backend's adamw (both with the bf16 write): %.2fx\n",
                  paired(passes.size() - 1, 2));
    std::printf(
        "  #wrong: of %zu elements (start and end of the shard), those not bitwise equal to the scalar\n"
        "  reference after one more step (the limit pass: to their values before it).\n",
        idx.size());
  }
  return out;
}

}  // namespace tz
