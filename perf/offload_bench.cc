// Offload pipeline benchmark: IO alone (every sub-group read and written back, no compute), Adam alone
// (the same update on the shard in memory), and the pipelined step; medians of `reps`.
#include "perf/timing.h"
#include "perf/offload_bench.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "core/backend.h"
#include "core/buffer_plan.h"
#include "core/cpu_adam.h"
#include "offload/nvme_store.h"
#include "zero/optimizer_swapper.h"

namespace tz {
namespace {

using bench::Clock;
using bench::median;
using bench::ms_since;

}  // namespace

nlohmann::json run_offload_bench(const OffloadBenchOptions& o, bool quiet) {
  const std::size_t n = o.params;
  std::vector<std::size_t> counts{n};
  NvmeStoreOptions so;
  so.paths = {o.path};
  so.block_size = o.block_size;
  so.queue_depth = unsigned(o.queue_depth);
  const OptimizerSwapPlan plan = plan_optimizer_swap(counts, 0, o.sub_group_size, o.buffer_count, o.block_size);
  so.bytes = plan.bytes;
  so.run_id = default_run_id();
  NvmeStore store(so);
  auto dev = make_cpu_device();
  PlannedBuffers planned(*dev, OptimizerSwapper::buffers(plan));
  OptimizerSwapper swap(store, plan, planned);
  std::vector<float> init(n), grad(n), p(n), m(n), v(n);
  for (std::size_t i = 0; i < n; ++i) {
    init[i] = p[i] = 0.01f * float(i % 1000) - 5.0f;
    grad[i] = 1e-3f * float((i * 7919) % 2000) - 1.0f;
  }
  swap.initialize(0, init.data());
  std::vector<std::uint16_t> working(n);
  AdamStep s;
  s.lr = 1e-4f;
  s.weight_decay = 0.01f;
  auto adam = [&](int, std::size_t begin, std::size_t cnt, float* pp, float* mm, float* vv) {
    cpu_adamw(pp, mm, vv, grad.data() + begin, cnt, s, working.data() + begin, DType::bf16);
  };
  std::vector<double> io_ms, adam_ms, pipe_ms, pipe_wait;
  for (int r = 0; r < o.reps; ++r) {
    ++s.step;
    auto t0 = Clock::now();
    swap.for_each([](int, std::size_t, std::size_t, float*, float*, float*) {});
    io_ms.push_back(ms_since(t0));
    t0 = Clock::now();
    cpu_adamw(p.data(), m.data(), v.data(), grad.data(), n, s, working.data(), DType::bf16);
    adam_ms.push_back(ms_since(t0));
    swap.stats().reset();
    t0 = Clock::now();
    swap.for_each(adam);
    pipe_ms.push_back(ms_since(t0));
    pipe_wait.push_back(1000.0 * swap.stats().wait_seconds);
  }
  // The pipelined steps ran on the NVMe copy exactly the updates Adam alone ran in memory: the master read
  // back must equal p bit for bit.
  std::vector<float> back(n);
  swap.read_master(0, back.data());
  long long wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += float_bits(back[i]) != float_bits(p[i]);
  double io = median(io_ms), ad = median(adam_ms), pipe = median(pipe_ms);
  double moved = 2.0 * double(plan.bytes);
  nlohmann::json j = {{"bench", "offload"},
                      {"params", n},
                      {"threads", omp_get_max_threads()},
                      {"isa", cpu_adam_isa()},
                      {"sub_group_size", o.sub_group_size},
                      {"buffer_count", o.buffer_count},
                      {"block_size", o.block_size},
                      {"queue_depth", o.queue_depth},
                      {"io_ms", io},
                      {"io_gbps", moved / (io / 1000.0) / 1e9},
                      {"adam_ms", ad},
                      {"pipelined_ms", pipe},
                      {"pipelined_wait_ms", median(pipe_wait)},
                      {"ratio_to_max", pipe / std::max(io, ad)},
                      {"wrong", wrong}};
  if (!quiet)
    std::printf(
        "bench offload: %zu params (fp32 master, m, v on NVMe at %s), sub-group %zu, %d buffers, %zu KiB "
        "blocks, "
        "qd %d, %d threads, %s Adam\n"
        "  IO alone (read + write back every sub-group): %8.1f ms (%.2f GB/s)\n"
        "  Adam alone (same shard in memory):            %8.1f ms\n"
        "  pipelined (read k+1 / Adam k / write k-1):    %8.1f ms = %.3f x max(IO, Adam)  (goal <= 1.1)\n"
        "  #wrong: %lld of %zu master values read back differ from the same steps run in memory\n",
        n, o.path.c_str(), o.sub_group_size, o.buffer_count, o.block_size / 1024, o.queue_depth,
        omp_get_max_threads(), cpu_adam_isa().c_str(), io, moved / (io / 1000.0) / 1e9, ad, pipe,
        pipe / std::max(io, ad), wrong, n);
  return j;
}

}  // namespace tz
