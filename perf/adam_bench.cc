// Adam benchmark: per configuration, the limit pass and the step run interleaved on the same host-tier
// arrays, repetition by repetition, so a change in the shared machine's load hits both alike; the bit
// check runs once, after timing.
#include "perf/adam_bench.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/cpu_adam.h"
#include "core/device.h"
#include "core/elementwise.h"
#include "core/error.h"
#include "model/param_layout.h"
#include "perf/bench_data.h"
#include "perf/timing.h"
#include "zero/group_adam.h"
#include "zero/optimizer_swapper.h"

namespace tz {
namespace {

using bench::Clock;
using bench::median;

// Inputs from the index (perf/bench_data.h): they do not depend on the threads.
using bench::hashed_uniform;

// One group's optimizer arrays on the host tier, as the engine keeps them with --offload-optimizer cpu.
struct GroupArrays {
  const GroupSpec* spec;
  Buffer<float> p, m, v, g;
  Buffer<std::uint8_t> w;
};

std::vector<GroupArrays> allocate(Device& dev, const ParamLayout& layout, DType working) {
  Allocator& host = dev.allocator(MemoryKind::pinned_host);
  std::vector<GroupArrays> gs;
  std::uint64_t seed = 0;
  for (const GroupSpec& spec : layout.groups) {
    const std::size_t n = spec.count;
    GroupArrays a{&spec,
                  Buffer<float>(host, n, "p"),
                  Buffer<float>(host, n, "m"),
                  Buffer<float>(host, n, "v"),
                  Buffer<float>(host, n, "g"),
                  Buffer<std::uint8_t>(host, n * dtype_size(working), "w")};
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < n; ++i) {
      a.p.data()[i] = hashed_uniform(i, seed + 1);
      a.g.data()[i] = 1e-2f * hashed_uniform(i, seed + 2);
      a.m.data()[i] = a.v.data()[i] = 0;
    }
    std::memset(a.w.data(), 0, a.w.bytes());
    seed += 7;
    gs.push_back(std::move(a));
  }
  return gs;
}

// The engine's call sequence for one step: each group in sub-group pieces (optimizer_swapper.h's
// chunking), each piece through group_adamw.
void step(std::vector<GroupArrays>& gs, std::size_t chunk, DType working, const AdamStep& s, AdamPass pass) {
  const std::size_t es = dtype_size(working);
  for (GroupArrays& a : gs)
    for (std::size_t b = 0; b < a.p.size(); b += chunk) {
      const std::size_t n = std::min(chunk, a.p.size() - b);
      group_adamw(*a.spec, b, n, a.p.data() + b, a.m.data() + b, a.v.data() + b, a.g.data() + b,
                  a.w.data() + b * es, working, s, 0.01f, pass);
    }
}

// Elements of every tensor's start and end, with their weight decay: what the bit check compares.
struct Sample {
  GroupArrays* group;
  std::size_t i;
  float decay;
  float p, m, v;
};

std::vector<Sample> sample(std::vector<GroupArrays>& gs) {
  std::vector<Sample> out;
  for (GroupArrays& a : gs)
    for (const TensorSpec& t : a.spec->tensors)
      for (std::size_t k = 0; k < std::min<std::size_t>(t.count, 64); ++k)
        for (std::size_t i : {t.offset + k, t.offset + t.count - 1 - k})
          out.push_back({&a, i, t.decay ? 0.01f : 0.0f, a.p.data()[i], a.m.data()[i], a.v.data()[i]});
  return out;
}

// Elements that differ in any bit from the scalar reference (math::adamw_update, from_float) after a
// step from the sampled values, or, for the limit pass, from the values before it.
long long count_wrong(const std::vector<Sample>& before, DType working, const AdamStep& s, AdamPass pass) {
  long long bad = 0;
  for (const Sample& x : before) {
    float p = x.p, m = x.m, v = x.v;
    if (pass == AdamPass::update) {
      AdamStep t = s;
      t.weight_decay = x.decay;
      math::adamw_update(p, m, v, x.group->g.data()[x.i], adam_coeffs(t));
    }
    const GroupArrays& a = *x.group;
    bool ok = float_bits(a.p.data()[x.i]) == float_bits(p) && float_bits(a.m.data()[x.i]) == float_bits(m) &&
              float_bits(a.v.data()[x.i]) == float_bits(v);
    std::uint32_t got = 0, want = float_bits(p);
    std::memcpy(&got, a.w.data() + x.i * dtype_size(working), dtype_size(working));
    if (working != DType::f32) want = pass == AdamPass::memory_limit ? want >> 16 : from_float<bf16>(p).bits;
    bad += !(ok && got == want);
  }
  return bad;
}

}  // namespace

nlohmann::json run_adam_bench(const AdamBenchOptions& opt, bool quiet) {
  TZ_CHECK(opt.reps >= 1 && opt.warmup_reps >= 0, "--reps must be at least 1 and --warmup-reps at least 0");
  if (opt.states != MomentFormat::fp32 || opt.master != MasterFormat::fp32) return run_adam_compressed_bench(opt, quiet);
  const ParamLayout layout = ParamLayout::build(opt.model);
  const std::size_t chunk = optimizer_chunk_elems(opt.sub_group_size, std::size_t(1) << 20);
  auto dev = make_cpu_device();
  nlohmann::json out = {
      {"bench", "adam"},
      {"model", opt.model_name},
      {"params", layout.total},
      {"threads", omp_get_max_threads()},
      {"isa", std::string(cpu_adam_isa_name(cpu_adam_isa_choice()))},
      {"sub_group_elems", chunk},
      {"reps", opt.reps},
      {"warmup_reps", opt.warmup_reps},
      {"bytes_formula", "params * (28 + working bytes): read p, g, m, v; write p, m, v; write working"}};
  if (!quiet)
    std::printf(
        "bench adam: %s (%.1fM params in %zu groups), host tier, %d threads, isa %s, sub-groups of %zu, "
        "%d warm-up + %d timed reps, interleaved\n  %-22s %9s %8s %9s %9s %7s\n",
        opt.model_name.c_str(), layout.total / 1e6, layout.groups.size(), omp_get_max_threads(),
        std::string(cpu_adam_isa_name(cpu_adam_isa_choice())).c_str(), chunk, opt.warmup_reps, opt.reps,
        "configuration", "ms/step", "GB/s", "limit ms", "of limit", "#wrong");
  for (DType working : opt.working) {
    std::vector<GroupArrays> gs = allocate(*dev, layout, working);
    AdamStep s;
    s.lr = 1e-4f;
    std::vector<double> adam_ms, limit_ms, ratio;
    for (int r = 0; r < opt.warmup_reps + opt.reps; ++r) {
      auto t0 = Clock::now();
      step(gs, chunk, working, s, AdamPass::memory_limit);
      const double lim = bench::ms_since(t0);
      ++s.step;
      t0 = Clock::now();
      step(gs, chunk, working, s, AdamPass::update);
      const double ad = bench::ms_since(t0);
      if (r < opt.warmup_reps) continue;
      adam_ms.push_back(ad), limit_ms.push_back(lim), ratio.push_back(lim / ad);
    }
    std::vector<Sample> before = sample(gs);
    step(gs, chunk, working, s, AdamPass::memory_limit);
    long long wrong = count_wrong(before, working, s, AdamPass::memory_limit);
    before = sample(gs);
    ++s.step;
    step(gs, chunk, working, s, AdamPass::update);
    wrong += count_wrong(before, working, s, AdamPass::update);
    const double bytes = double(layout.total) * (kAdamBytesPerParam + double(dtype_size(working)));
    const double t = median(adam_ms), of_limit = median(ratio);
    const std::string name = "adamw + " + std::string(dtype_name(working)) + " working write";
    out["rows"].push_back({{"configuration", name},
                           {"working", std::string(dtype_name(working))},
                           {"ms_per_step", t},
                           {"gb_per_s", bytes / (t * 1e-3) / 1e9},
                           {"limit_ms", median(limit_ms)},
                           {"fraction_of_limit", of_limit},
                           {"ms_all", adam_ms},
                           {"limit_ms_all", limit_ms},
                           {"checked_elements", before.size()},
                           {"wrong", wrong}});
    if (!quiet)
      std::printf("  %-22s %9.2f %8.2f %9.2f %8.1f%% %7lld\n", name.c_str(), t, bytes / (t * 1e-3) / 1e9,
                  median(limit_ms), 100.0 * of_limit, wrong);
  }
  if (!quiet)
    std::printf(
        "  of limit: median over reps of (limit pass time / step time), each pair run back to back; goal >= "
        "95%%.\n"
        "  #wrong: sampled elements (each tensor's first and last 64) not bitwise equal to the scalar "
        "reference.\n");
  return out;
}

}  // namespace tz
