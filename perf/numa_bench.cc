// The NUMA node benchmark (see numa_bench.h).
#include "perf/numa_bench.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/cpu_adam.h"
#include "core/error.h"
#include "core/numa.h"
#include "core/thread_affinity.h"
#include "perf/timing.h"

namespace tz {
namespace {

using Seconds = std::chrono::duration<double>;

// A buffer of `n` floats bound to `node`, or from ordinary memory (node < 0), freed on scope exit.
class Floats {
 public:
  Floats(std::size_t n, int node) : bytes_((n * sizeof(float) + 4095) / 4096 * 4096), node_(node) {
    p_ = static_cast<float*>(node >= 0 ? map_node_memory(bytes_, node, "bench numa") : std::aligned_alloc(4096, bytes_));
    TZ_CHECK(p_, "bench numa: out of memory for ", bytes_, " bytes");
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < n; ++i) p_[i] = 1e-3f * float(i % 1000);  // faults the pages in, on the node
  }
  ~Floats() { node_ >= 0 ? unmap_node_memory(p_, bytes_) : std::free(p_); }
  Floats(const Floats&) = delete;
  Floats& operator=(const Floats&) = delete;
  float* data() { return p_; }

 private:
  std::size_t bytes_;
  int node_;
  float* p_;
};

// GB/s of a fill and a sum over `n` floats on `node` (medians of reps, after one untimed of each).
std::pair<double, double> stream_gbs(int node, std::size_t n, int reps) {
  Floats a(n, node);
  float* p = a.data();
  std::vector<double> rd, wr;
  float sink = 0;
  for (int i = 0; i <= reps; ++i) {
    auto t0 = bench::Clock::now();
#pragma omp parallel for schedule(static)
    for (std::size_t k = 0; k < n; ++k) p[k] = float(i);
    const double w = Seconds(bench::Clock::now() - t0).count();
    t0 = bench::Clock::now();
    float sum = 0;  // simd: the reduction vectorises (lanes added in any order), as a stream read should
#pragma omp parallel for simd schedule(static) reduction(+ : sum)
    for (std::size_t k = 0; k < n; ++k) sum += p[k];
    const double r = Seconds(bench::Clock::now() - t0).count();
    sink += sum;
    if (i) wr.push_back(w), rd.push_back(r);
  }
  TZ_CHECK(sink >= 0, "bench numa: a negative sum of non-negative values");
  const double bytes = double(n) * sizeof(float);
  return {bytes / bench::median(rd) / 1e9, bytes / bench::median(wr) / 1e9};
}

// GB/s (32 bytes per element) of the CPU Adam with master, m and v on `node` (< 0: ordinary memory), the
// gradient and the fp32 working copy in ordinary memory.
double adam_gbs(int node, std::size_t n, int reps) {
  Floats p(n, node), m(n, node), v(n, node), g(n, -1), w(n, -1);
  AdamStep s;
  s.lr = 1e-4f;
  std::vector<double> t;
  for (int i = 0; i <= reps; ++i) {
    s.step = i + 1;
    const auto t0 = bench::Clock::now();
    cpu_adamw(p.data(), m.data(), v.data(), g.data(), n, s, w.data(), DType::f32);
    if (i) t.push_back(Seconds(bench::Clock::now() - t0).count());
  }
  return double(n) * 32 / bench::median(t) / 1e9;
}

}  // namespace

nlohmann::json run_numa_bench(const NumaBenchOptions& opt, bool quiet) {
  std::string why;
  const std::vector<NumaNode> nodes = numa_nodes(&why);
  nlohmann::json rows = nlohmann::json::array();
  const double host_adam = opt.adam && !nodes.empty() ? adam_gbs(-1, opt.adam_elements, opt.reps) : 0;
  for (const NumaNode& node : nodes) {
    const std::size_t bytes = std::min(opt.stream_bytes, node.mem_free_bytes / 4 / 4096 * 4096);
    if (bytes < (std::size_t(16) << 20)) continue;  // too little free to measure
    OmpTeamOnCpus near(nearest_cpus(node.id));     // as the CPU Adam runs on a numa:N tier
    const auto [read, write] = stream_gbs(node.id, bytes / sizeof(float), opt.reps);
    const bool room = node.mem_free_bytes / 4 > opt.adam_elements * 3 * sizeof(float);
    const double adam = opt.adam && room ? adam_gbs(node.id, opt.adam_elements, opt.reps) : 0;
    rows.push_back({{"node", node.id}, {"cpus", cores_text(nearest_cpus(node.id))}, {"memory_only", node.cpus.empty()},
                    {"bytes", bytes}, {"read_gbs", read}, {"write_gbs", write}, {"adam_gbs", adam},
                    {"adam_host_gbs", host_adam}});
  }
  const nlohmann::json out = {{"isa", cpu_adam_isa()}, {"threads", omp_get_max_threads()}, {"rows", rows},
                              {"problem", why}};
  if (quiet) return out;
  if (nodes.empty()) {
    std::printf("bench numa: no NUMA node: %s\n", why.c_str());
    return out;
  }
  std::printf("bench numa: %d threads, CPU Adam isa %s; per node: a buffer bound there, the team on its nearest "
              "CPUs; medians of %d\n",
              omp_get_max_threads(), cpu_adam_isa().c_str(), opt.reps);
  std::printf("%5s %-14s %10s %10s %10s %12s %13s\n", "node", "nearest cpus", "MiB", "read GB/s", "write GB/s",
              "Adam GB/s", "host Adam GB/s");
  for (const auto& r : rows)
    std::printf("%5d %-14s %10.0f %10.2f %10.2f %12.2f %13.2f\n", r["node"].get<int>(),
                (r["cpus"].get<std::string>() + (r["memory_only"].get<bool>() ? " (far)" : "")).c_str(),
                r["bytes"].get<double>() / 1048576.0, r["read_gbs"].get<double>(), r["write_gbs"].get<double>(),
                r["adam_gbs"].get<double>(), r["adam_host_gbs"].get<double>());
  return out;
}

}  // namespace tz
