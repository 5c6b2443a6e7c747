// `bench adam --optimizer-states/--master-weights`: compressed optimizer states (issue 36) beside the fp32
// CPU Adam on the same model, repetition by repetition, so the shared machine's load hits both alike; the
// bit check against the scalar definition runs once, after timing.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/adam_compressed.h"
#include "core/blockwise_quant.h"
#include "core/cpu_adam.h"
#include "core/device.h"
#include "core/error.h"
#include "core/quant_map.h"
#include "model/param_layout.h"
#include "perf/adam_bench.h"
#include "perf/bench_data.h"
#include "perf/timing.h"
#include "zero/group_adam.h"

namespace tz {
namespace {

using bench::Clock;
using bench::median;

constexpr float kWeightDecay = 0.01f;
constexpr std::uint64_t kSeed = 1;

// Inputs from the index (perf/bench_data.h): they do not depend on the threads.
using bench::hashed_uniform;

// The fp32 step as bf16 training runs it today: each group through group_adamw with the bf16 working write.
struct Fp32Group {
  const GroupSpec* spec;
  Buffer<float> p, m, v, g;
  Buffer<bf16> w;
};

std::vector<Fp32Group> fp32_arrays(Allocator& host, const ParamLayout& layout) {
  std::vector<Fp32Group> gs;
  std::uint64_t seed = 0;
  for (const GroupSpec& spec : layout.groups) {
    const std::size_t n = spec.count;
    Fp32Group a{&spec, Buffer<float>(host, n, "p"), Buffer<float>(host, n, "m"), Buffer<float>(host, n, "v"),
                Buffer<float>(host, n, "g"), Buffer<bf16>(host, n, "w")};
    for (std::size_t i = 0; i < n; ++i) {
      a.p.data()[i] = hashed_uniform(i, seed + 1), a.g.data()[i] = 1e-2f * hashed_uniform(i, seed + 2);
      a.m.data()[i] = a.v.data()[i] = 0.0f;
    }
    seed += 7;
    gs.push_back(std::move(a));
  }
  return gs;
}

void fp32_step(std::vector<Fp32Group>& gs, const AdamStep& s) {
  for (Fp32Group& a : gs)
    group_adamw(*a.spec, 0, a.p.size(), a.p.data(), a.m.data(), a.v.data(), a.g.data(), a.w.data(), DType::bf16, s,
                kWeightDecay);
}

// One tensor in the compressed arrays: its elements from `at` (each tensor on a 64-element boundary), its
// moments' bytes from `moment_at`, its blocks from `block`.
struct Slot {
  std::size_t at, n, moment_at, block;
  float decay;
  MomentFormat moments;
};

std::size_t moment_size(MomentFormat f) { return f == MomentFormat::fp32 ? 4 : f == MomentFormat::bf16 ? 2 : 1; }

struct Compressed {
  MasterFormat master;
  std::vector<Slot> slots;
  std::size_t params = 0;       // tensor elements
  std::size_t fp32_params = 0;  // of them, in tensors under kCompressedMinElements
  Buffer<unsigned char> p, m, v;
  Buffer<float> m_abs, v_abs, g;

  std::size_t p_size() const { return master == MasterFormat::fp32 ? 4 : 2; }

  CompressedStates states(const Slot& s, std::size_t first) {
    CompressedStates st;
    st.moments = s.moments, st.master = master;
    st.p = p.data() + (s.at + first) * p_size();
    st.m = m.data() + s.moment_at + first * moment_size(s.moments);
    st.v = v.data() + s.moment_at + first * moment_size(s.moments);
    st.m_absmax = m_abs.data() + s.block + first / kQuantBlock;
    st.v_absmax = v_abs.data() + s.block + first / kQuantBlock;
    return st;
  }
};

Compressed compressed_arrays(Allocator& host, const ParamLayout& layout, MomentFormat want, MasterFormat master) {
  Compressed c{master, {}, 0, 0, Buffer<unsigned char>(), Buffer<unsigned char>(), Buffer<unsigned char>(),
               Buffer<float>(), Buffer<float>(), Buffer<float>()};
  std::size_t at = 0, moment_at = 0, block = 0;
  for (const GroupSpec& spec : layout.groups)
    for (const TensorSpec& t : spec.tensors) {
      const MomentFormat f = moment_format_for(t.count, want);
      c.slots.push_back({at, t.count, moment_at, block, t.decay ? kWeightDecay : 0.0f, f});
      c.params += t.count;
      if (f == MomentFormat::fp32 && want != MomentFormat::fp32) c.fp32_params += t.count;
      at += (t.count + 63) / 64 * 64;
      moment_at += (t.count * moment_size(f) + 63) / 64 * 64;
      block += quant_blocks(t.count);
    }
  c.p = Buffer<unsigned char>(host, at * c.p_size(), "p");
  c.g = Buffer<float>(host, at, "g");
  c.m = Buffer<unsigned char>(host, moment_at, "m");
  c.v = Buffer<unsigned char>(host, moment_at, "v");
  c.m_abs = Buffer<float>(host, std::max<std::size_t>(block, 1), "m_absmax");
  c.v_abs = Buffer<float>(host, std::max<std::size_t>(block, 1), "v_absmax");
  std::fill(c.m_abs.data(), c.m_abs.data() + c.m_abs.size(), 0.0f);
  std::fill(c.v_abs.data(), c.v_abs.data() + c.v_abs.size(), 0.0f);
  const std::uint8_t mz = nearest_code(dynamic_map(true), 0.0f), vz = nearest_code(dynamic_map(false), 0.0f);
  for (const Slot& s : c.slots) {
    for (std::size_t i = 0; i < s.n; ++i) {
      const float x = hashed_uniform(i, s.at + 1);
      if (master == MasterFormat::fp32)
        reinterpret_cast<float*>(c.p.data())[s.at + i] = x;
      else
        reinterpret_cast<bf16*>(c.p.data())[s.at + i] = float_to_bf16(x);
      c.g.data()[s.at + i] = 1e-2f * hashed_uniform(i, s.at + 2);
    }
    const std::size_t bytes = s.n * moment_size(s.moments);
    const int fill = s.moments == MomentFormat::int8 ? -1 : 0;  // int8: each map's code of 0
    std::memset(c.m.data() + s.moment_at, fill < 0 ? mz : 0, bytes);
    std::memset(c.v.data() + s.moment_at, fill < 0 ? vz : 0, bytes);
  }
  return c;
}

void compressed_step(Compressed& c, CpuAdamIsa isa, const AdamStep& base) {
  for (const Slot& s : c.slots) {
    AdamStep a = base;
    a.weight_decay = s.decay;
    adamw_compressed(isa, a, c.states(s, 0), c.g.data() + s.at, s.n, ShardPosition{0, kSeed});
  }
}

// Bytes per parameter one step moves: the master read and written, the gradient read, both moments read
// and written (int8 with its absmax per 256).
double bytes_per_param(const Compressed& c) {
  double bytes = 0;
  for (const Slot& s : c.slots)
    bytes += double(s.n) * (2.0 * double(c.p_size()) + 4.0 + 2.0 * moment_bytes_per_element(s.moments));
  return bytes / double(c.params);
}

// A copy of elements [first, first + n) of one slot's states, and the same range's states to compare.
struct Snapshot {
  std::vector<unsigned char> p, m, v;
  std::vector<float> m_abs, v_abs;
};

Snapshot take(Compressed& c, const Slot& s, std::size_t first, std::size_t n) {
  const CompressedStates st = c.states(s, first);
  const std::size_t ms = moment_size(s.moments), blocks = quant_blocks(n);
  Snapshot x;
  auto bytes = [](const void* from, std::size_t count) {
    const auto* b = static_cast<const unsigned char*>(from);
    return std::vector<unsigned char>(b, b + count);
  };
  x.p = bytes(st.p, n * c.p_size()), x.m = bytes(st.m, n * ms), x.v = bytes(st.v, n * ms);
  x.m_abs.assign(st.m_absmax, st.m_absmax + blocks), x.v_abs.assign(st.v_absmax, st.v_absmax + blocks);
  return x;
}

// Each tensor's first and last block, before the timed path's step: stepped here by the scalar path and
// compared with what the timed path wrote. Returns the elements (and blocks' absmax) whose bits differ.
struct Checked {
  long long elements = 0, wrong = 0;
};

struct Before {
  const Slot* slot;
  std::size_t first, n;
  Snapshot states;
};

std::vector<Before> before_check(Compressed& c) {
  std::vector<Before> out;
  for (const Slot& s : c.slots) {
    const std::size_t last = (s.n - 1) / kQuantBlock * kQuantBlock;
    for (std::size_t first : {std::size_t(0), last}) {
      if (first == last && !out.empty() && out.back().slot == &s) break;
      const std::size_t n = std::min(kQuantBlock, s.n - first);
      out.push_back({&s, first, n, take(c, s, first, n)});
    }
  }
  return out;
}

Checked check(Compressed& c, std::vector<Before>& before, const AdamStep& base) {
  Checked r;
  for (Before& b : before) {
    AdamStep a = base;
    a.weight_decay = b.slot->decay;
    CompressedStates st;
    st.moments = b.slot->moments, st.master = c.master;
    st.p = b.states.p.data(), st.m = b.states.m.data(), st.v = b.states.v.data();
    st.m_absmax = b.states.m_abs.data(), st.v_absmax = b.states.v_abs.data();
    adamw_compressed(CpuAdamIsa::scalar, a, st, c.g.data() + b.slot->at + b.first, b.n,
                     ShardPosition{b.first, kSeed});
    const Snapshot got = take(c, *b.slot, b.first, b.n);
    const std::size_t ps = c.p_size(), ms = moment_size(b.slot->moments);
    for (std::size_t i = 0; i < b.n; ++i) {
      const bool same = std::memcmp(&got.p[i * ps], &b.states.p[i * ps], ps) == 0 &&
                        std::memcmp(&got.m[i * ms], &b.states.m[i * ms], ms) == 0 &&
                        std::memcmp(&got.v[i * ms], &b.states.v[i * ms], ms) == 0;
      r.wrong += !same;
    }
    if (b.slot->moments == MomentFormat::int8)
      r.wrong += std::memcmp(got.m_abs.data(), b.states.m_abs.data(), 4 * got.m_abs.size()) != 0 ||
                 std::memcmp(got.v_abs.data(), b.states.v_abs.data(), 4 * got.v_abs.size()) != 0;
    r.elements += static_cast<long long>(b.n);
  }
  return r;
}

}  // namespace

nlohmann::json run_adam_compressed_bench(const AdamBenchOptions& opt, bool quiet) {
  const ParamLayout layout = ParamLayout::build(opt.model);
  auto dev = make_cpu_device();
  Allocator& host = dev->allocator(MemoryKind::pinned_host);
  const CpuAdamIsa isa = cpu_adam_isa_choice();
  const std::string format = std::string(moment_format_name(opt.states)) + " states + " +
                             std::string(master_format_name(opt.master)) + " master";
  std::vector<Fp32Group> base = fp32_arrays(host, layout);
  Compressed c = compressed_arrays(host, layout, opt.states, opt.master);
  const double base_bytes = kAdamBytesPerParam + 2.0, c_bytes = bytes_per_param(c);
  AdamStep s;
  s.lr = 1e-4f;
  std::vector<double> base_ms, c_ms, ratio;
  for (int r = 0; r < opt.warmup_reps + opt.reps; ++r) {
    auto t0 = Clock::now();
    fp32_step(base, s);
    const double b = bench::ms_since(t0);
    t0 = Clock::now();
    compressed_step(c, isa, s);
    const double x = bench::ms_since(t0);
    ++s.step;
    if (r < opt.warmup_reps) continue;
    base_ms.push_back(b), c_ms.push_back(x), ratio.push_back(b / x);
  }
  std::vector<Before> before = before_check(c);
  compressed_step(c, isa, s);
  const Checked checked = check(c, before, s);
  const double params = double(c.params), bm = median(base_ms), cm = median(c_ms);
  nlohmann::json out = {{"bench", "adam"},
                        {"model", opt.model_name},
                        {"params", c.params},
                        {"threads", omp_get_max_threads()},
                        {"isa", std::string(cpu_adam_isa_name(isa))},
                        {"optimizer_states", std::string(moment_format_name(opt.states))},
                        {"master_weights", std::string(master_format_name(opt.master))},
                        {"params_in_fp32_moments", c.fp32_params},
                        {"reps", opt.reps},
                        {"warmup_reps", opt.warmup_reps}};
  out["rows"].push_back({{"configuration", "fp32 states + fp32 master, bf16 working write"},
                         {"ms_per_step", bm},
                         {"ns_per_param", bm * 1e6 / params},
                         {"bytes_per_param", base_bytes},
                         {"gb_per_s", base_bytes * params / (bm * 1e-3) / 1e9},
                         {"speedup_over_fp32", 1.0},
                         {"ms_all", base_ms},
                         {"wrong", 0}});
  out["rows"].push_back({{"configuration", format},
                         {"ms_per_step", cm},
                         {"ns_per_param", cm * 1e6 / params},
                         {"bytes_per_param", c_bytes},
                         {"gb_per_s", c_bytes * params / (cm * 1e-3) / 1e9},
                         {"speedup_over_fp32", median(ratio)},
                         {"ms_all", c_ms},
                         {"checked_elements", checked.elements},
                         {"wrong", checked.wrong}});
  if (!quiet) {
    std::printf(
        "bench adam: %s (%.1fM params), host tier, %d threads, isa %s, %s beside fp32, %d warm-up + %d timed "
        "reps, interleaved\n  %-46s %9s %9s %8s %8s %8s %7s\n",
        opt.model_name.c_str(), params / 1e6, omp_get_max_threads(), std::string(cpu_adam_isa_name(isa)).c_str(),
        format.c_str(), opt.warmup_reps, opt.reps, "configuration", "ms/step", "ns/param", "B/param", "GB/s",
        "vs fp32", "#wrong");
    for (const auto& row : out["rows"])
      std::printf("  %-46s %9.2f %9.3f %8.2f %8.2f %7.2fx %7lld\n",
                  row["configuration"].get<std::string>().c_str(), row["ms_per_step"].get<double>(),
                  row["ns_per_param"].get<double>(), row["bytes_per_param"].get<double>(),
                  row["gb_per_s"].get<double>(), row["speedup_over_fp32"].get<double>(),
                  row["wrong"].get<long long>());
    std::printf(
        "  vs fp32: median over reps of (fp32 step time / this step's time), each pair run back to back.\n"
        "  %.1f%% of the params are in tensors under %zu elements, which keep fp32 moments.\n"
        "  #wrong: of %lld elements (each tensor's first and last block), those not bitwise equal to the scalar "
        "definition.\n",
        100.0 * double(c.fp32_params) / params, kCompressedMinElements, checked.elements);
  }
  return out;
}

}  // namespace tz
