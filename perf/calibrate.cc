// Calibration: each rate from the benchmark that measures the training code path, gathered into a
// Hardware description.
#include "perf/calibrate.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <utility>

#include "comm/mpi_comm.h"
#include "core/device.h"
#include "core/error.h"
#include "perf/adam_bench.h"
#include "perf/calibrate_comm.h"
#include "perf/calibrate_memory.h"
#include "perf/io_bench.h"
#include "perf/numa_bench.h"
#include "perf/offload_bench.h"
#include "perf/step_bench.h"
#include "perf/timing.h"
#include "zero/step_time.h"

namespace tz {
namespace {

// GB/s of a 256 MiB copy from the host tier (pinned) to device memory, the way staging moves bytes.
double copy_gbs() {
  auto dev = make_cpu_device();
  auto s = dev->create_stream();
  const std::size_t n = std::size_t(64) << 20;  // floats
  Buffer<float> a(dev->allocator(MemoryKind::pinned_host), n, "calibrate copy source"), b(*dev, n, "calibrate copy");
  dev->backend().memset_async(*s, a.data(), 0, a.bytes());
  std::vector<double> t;
  for (int i = 0; i < 6; ++i) {
    const auto t0 = bench::Clock::now();
    dev->backend().copy_async(*s, b.data(), a.data(), a.bytes());
    s->synchronize();
    if (i) t.push_back(std::chrono::duration<double>(bench::Clock::now() - t0).count());
  }
  return double(a.bytes()) / bench::median(t) / 1e9;
}

// Joins a barrier and sleeps until every rank has: with no host thread in Work::wait(), the progress thread
// polls at its background pace (every 400 us at most, ~5% of a core) instead of a waiter's (every 50 us).
void wait_asleep(Communicator& comm) {
  const std::unique_ptr<Work> w = comm.barrier();
  while (!w->done()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  w->wait();  // throws if it failed
}

// The optimizer's NVMe states as training moves them: `bench offload`'s IO alone (a shard's master, m and
// v read and written back unit by unit through the swap ring, as training's optimizer step does, checksums
// on) in a folder of this rank's own under the NVMe path, on a shard of 4M elements in 4 units (48 MB each
// way: the size of the validation runs' shards, 1-8M elements in 3-8 groups), the median of 5
// repetitions. Returns the seconds and the bytes moved (both ways).
std::pair<double, double> time_nvme_states(const CalibrateOptions& opt, int rank) {
  const std::filesystem::path dir = std::filesystem::path(opt.nvme_path) / ("calibrate-states-" + std::to_string(rank));
  std::filesystem::create_directories(dir);
  OffloadBenchOptions o;
  o.path = dir.string();
  o.params = 4'000'000;
  o.sub_group_size = o.params / 4;
  o.reps = 5;
  nlohmann::json r;
  try {
    r = run_offload_bench(o, true);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    throw;
  }
  std::filesystem::remove_all(dir);
  TZ_CHECK(r["wrong"].get<long long>() == 0, "bench calibrate: the NVMe states read back from ", dir.string(),
           " differ from the same steps run in memory (", r["wrong"].get<long long>(), " values); check the disk");
  const double s = r["io_ms"].get<double>() / 1e3;
  return {s, r["io_gbps"].get<double>() * 1e9 * s};
}

// The states' rates (hardware.h): every rank of the node at once, its ranks' bytes over the slowest rank's
// time (nvme_states_gbs); then rank 0 alone while the others wait asleep (nvme_states_solo_gbs). `bench io`
// streams one extent after another from one rank instead (perf/README.md).
void measure_nvme_states(const CalibrateOptions& opt, Communicator* comm, Hardware& h) {
  const int ranks = comm ? comm->size() : 1, rank = comm ? comm->rank() : 0;
  if (comm) comm->barrier()->wait();
  auto [slowest, moved] = time_nvme_states(opt, rank);
  if (comm) comm->all_reduce(&slowest, 1, DType::f64, ReduceOp::max)->wait();
  h.nvme_states_gbs = ranks * moved / slowest / 1e9;
  if (ranks == 1) {
    h.nvme_states_solo_gbs = h.nvme_states_gbs;
    return;
  }
  double solo = 0;
  if (rank == 0) {
    comm->barrier()->wait();
    const auto [s, bytes] = time_nvme_states(opt, rank);
    solo = bytes / s / 1e9;
    comm->barrier()->wait();
  } else {
    wait_asleep(*comm);
    wait_asleep(*comm);
  }
  comm->all_reduce(&solo, 1, DType::f64, ReduceOp::max)->wait();
  h.nvme_states_solo_gbs = solo;
}

}  // namespace

std::string local_hardware_path() {
  if (const char* p = std::getenv("TIERZERO_HARDWARE"); p && *p) return p;
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return std::string(x) + "/tierzero/hardware.json";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.config/tierzero/hardware.json";
}

Hardware calibrate(const CalibrateOptions& opt, Communicator* comm, bool quiet) {
  const int ranks = comm ? comm->size() : 1;
  const bool lead = !comm || comm->rank() == 0;
  Hardware h;
  h.name = "local";
  h.device = DeviceKind::cpu;
  h.ranks_per_node = ranks;
  h.cores = ranks * omp_get_max_threads();  // what every rate below is measured on
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  h.device_bytes = h.host_bytes = std::size_t(pages) * std::size_t(page) / std::size_t(ranks);
  h.host_bytes *= std::size_t(ranks);
  // What a rank holds outside the plan's buffers, first: before any other collective or product has run.
  h.memory = measure_memory_lines(opt, comm);

  // Compute: forward + backward of a training step (the optimizer is its own term), every rank at once.
  StepBenchOptions so;
  so.model = opt.model;
  so.model_name = opt.model_name;
  so.micro_batch = opt.micro_batch;
  so.seq_len = opt.seq_len;
  so.dtypes = {DType::f32, DType::bf16, DType::f16};
  so.steps = 3;
  so.mix_steps = 3;
  const nlohmann::json step = run_step_bench(so, true);
  const double flops = model_flops(opt.model, opt.micro_batch, opt.seq_len);
  const char* names[3] = {"fp32", "bf16", "fp16"};
  for (int i = 0; i < 3; ++i) {
    const nlohmann::json& r = step[names[i]];
    const double s = (r["ms_forward"].get<double>() + r["ms_backward"].get<double>()) / 1e3;
    h.step_tflops[i] = flops / s / 1e12 * ranks;  // the node's: each rank got this while all ran
    h.peak_tflops[i] =
        std::max(r["matmul_gflops_2048"].get<double>(), r["matmul_gflops_mlp_shape"].get<double>()) / 1e3 * ranks;
    // What that time went to, for other shapes than this model's (zero/step_mix.h).
    if (r.contains("mix"))
      for (int k = 0; k < 3; ++k)
        h.mix.share[i][k] = r["mix"][k == 0 ? "matmul" : k == 1 ? "attention" : "other"].get<double>();
  }
  h.mix.calibrated = compute_counts(opt.model, opt.micro_batch, opt.seq_len);
  // One rank alone on all the cores the ranks used (the others wait in a barrier): how a rank's products
  // scale with its own threads, which the plan reads for ranks of more threads than were calibrated. The
  // others wait asleep: a host thread in Work::wait() has its progress thread poll every 50 us, which took
  // a third of the lone rank's rate on a 2-vCPU VM (fp32 0.18-0.19 TFLOP/s with the others in wait(),
  // 0.24-0.26 asleep: 1.67x the rate per rank at one thread each, as `bench step` reads one rank at two
  // threads against one, 137 against 229 ms; perf/README.md).
  h.calibrated_threads = omp_get_max_threads();
  if (ranks > 1) {  // one rank alone already used all of them
    comm->barrier()->wait();
    if (lead) {
      omp_set_num_threads(h.cores);
      const nlohmann::json solo = run_step_bench(so, true);
      omp_set_num_threads(h.calibrated_threads);
      for (int i = 0; i < 3; ++i) {
        const nlohmann::json& r = solo[names[i]];
        h.solo_step_tflops[i] = flops / ((r["ms_forward"].get<double>() + r["ms_backward"].get<double>()) / 1e3) / 1e12;
      }
      comm->barrier()->wait();
    } else {
      wait_asleep(*comm);
    }
  }
  // The CPU Adam on the host tier, as offloaded groups are updated (the fp32-working row).
  AdamBenchOptions ao;
  ao.model = opt.model;
  ao.model_name = opt.model_name;
  ao.working = {DType::f32};
  ao.reps = 3;
  const nlohmann::json adam = run_adam_bench(ao, true);
  h.cpu_adam_gbs = adam["rows"][0]["gb_per_s"].get<double>() * ranks;
  h.device_gbs = h.cpu_adam_gbs;  // on a CPU the device AdamW is the same CPU Adam
  // The same update on compressed states (issue 36), each beside the fp32 step, every rank at once.
  for (MomentFormat states : {MomentFormat::fp32, MomentFormat::bf16, MomentFormat::int8})
    for (MasterFormat master : {MasterFormat::fp32, MasterFormat::bf16_sr}) {
      if (states == MomentFormat::fp32 && master == MasterFormat::fp32) continue;
      AdamBenchOptions fo = ao;
      fo.states = states, fo.master = master, fo.warmup_reps = 1;
      const nlohmann::json r = run_adam_compressed_bench(fo, true);
      h.cpu_adam_format_time[std::string(moment_format_name(states)) + "/" +
                             std::string(master_format_name(master))] =
          1.0 / r["rows"][1]["speedup_over_fp32"].get<double>();
    }
  h.link_gbs = copy_gbs();
  // Each NUMA node's stream rates (`tierzero bench numa`), every rank measuring at once.
  NumaBenchOptions no;
  no.adam = false;
  const nlohmann::json numa = run_numa_bench(no, true);  // kept: the loop reads into it
  for (const auto& r : numa["rows"])
    h.numa.push_back({r["node"].get<int>(), r["read_gbs"].get<double>() * ranks, r["write_gbs"].get<double>() * ranks});
  if (!opt.nvme_path.empty() && lead) {
    IoBenchOptions io;
    io.path = opt.nvme_path;
    io.size = opt.nvme_bytes;
    io.buffer_bytes = std::min<std::uint64_t>(io.buffer_bytes, opt.nvme_bytes);
    const nlohmann::json r = run_io_bench(io, true);
    h.nvme_read_gbs = r["read_gbps"].get<double>();
    h.nvme_write_gbs = r["write_gbps"].get<double>();
  }
  if (!opt.nvme_path.empty()) measure_nvme_states(opt, comm, h);
  measure_cast_rate(ranks, h);
  std::string spread;
  if (comm && ranks > 1) spread = measure_comm_terms(dynamic_cast<MpiCommunicator&>(*comm), opt, h);
  h.source = "tierzero bench calibrate on " + std::string(host) + " (" + std::to_string(ranks) + " rank" +
             (ranks == 1 ? "" : "s") + ", " + opt.model_name + " micro-batch " + std::to_string(opt.micro_batch) +
             " x seq " + std::to_string(opt.seq_len) + ")";
  if (!quiet && lead) std::printf("%s\n%s", h.to_json().dump(1).c_str(), spread.empty() ? "" : (spread + "\n").c_str());
  return h;
}

}  // namespace tz
