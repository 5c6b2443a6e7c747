// `tierzero doctor`: what this machine offers tierzero, checked rather than assumed: the CPU and its
// ISA and heap allocator, GPUs, driver, CUDA runtime, cuBLAS, NCCL and cuDNN, peer access, the locked-memory limit, io_uring and
// O_DIRECT on each --nvme-path, Open MPI's version and CUDA awareness, and the launcher variables
// seen. It works without a GPU and says so; --json prints the same as one JSON object. The exit status
// is 1 when a check it was asked to make (an --nvme-path) fails.
#include <sys/resource.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "comm/mpi_info.h"
#include "comm/world.h"
#include "core/cpu_adam.h"
#include "core/device.h"
#include "core/error.h"
#include "core/heap.h"
#include "core/memory_budget.h"
#include "core/numa.h"
#include "core/onednn_gemm.h"
#include "core/thread_affinity.h"
#include "launch/commands.h"
#include "launch/flag_table.h"
#include "launch/gpu_probe.h"
#include "launch/parse_args.h"
#include "offload/direct_io_probe.h"

namespace po = boost::program_options;

namespace tz {
namespace {

using json = nlohmann::json;

json cpu_report() {
  std::ifstream f("/proc/cpuinfo");
  std::string line, model = "?", flags;
  while (std::getline(f, line)) {
    if (model == "?" && line.rfind("model name", 0) == 0) model = line.substr(line.find(':') + 2);
    if (flags.empty() && line.rfind("flags", 0) == 0) flags.append(" ").append(line, line.find(':') + 2).append(" ");
  }
  json isa = json::array();
  for (const char* x : {"avx2", "fma", "avx512f", "avx512bw", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16"})
    if (flags.find(std::string(" ").append(x).append(" ")) != std::string::npos) isa.push_back(x);
  const bool amx = flags.find(" amx_bf16 ") != std::string::npos;
  return {{"model", model},
          {"logical_cores", long(::sysconf(_SC_NPROCESSORS_ONLN))},
          {"isa", isa},
          {"amx_bf16", amx},
          {"cpu_adam", cpu_adam_isa()},
          {"onednn", onednn_version()},
          {"heap", heap_allocator()}};
}

json gpu_report() {
  const GpuReport g = probe_gpus();
  json devices = json::array();
  for (const auto& d : g.gpus)
    devices.push_back({{"name", d.name},
                       {"memory_bytes", d.memory_bytes},
                       {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)}});
  json j = {{"driver", g.driver},
            {"problem", g.driver_problem},
            {"devices", devices},
            {"peer_access", g.peer},
            {"cuda_runtime", {{"version", g.runtime}, {"library", g.runtime_lib}}},
            {"cublas", {{"version", g.cublas}, {"library", g.cublas_lib}}},
            {"nccl", {{"version", g.nccl}, {"library", g.nccl_lib}}},
            {"cudnn",
             {{"version", g.cudnn}, {"library", g.cudnn_lib}, {"nvrtc", g.cudnn_nvrtc_lib}, {"problem", g.cudnn_problem}}},
            {"cuda_training_in_this_build", cuda_backend_built()}};
  return j;
}

json memlock_report() {
  rlimit rl{};
  ::getrlimit(RLIMIT_MEMLOCK, &rl);
  auto v = [](rlim_t x) { return x == RLIM_INFINITY ? json(-1) : json(std::uint64_t(x)); };
  return {{"soft", v(rl.rlim_cur)}, {"hard", v(rl.rlim_max)}, {"root", ::geteuid() == 0}};
}

json nvme_report(const std::vector<std::string>& paths) {
  json a = json::array();
  for (const auto& p : paths) {
    const DirectIoReport r = probe_direct_io(p);
    a.push_back({{"path", p}, {"ok", r.ok}, {"filesystem", r.filesystem}, {"free_bytes", r.free_bytes}, {"problem", r.why}});
  }
  return a;
}

json launcher_report() {
  json j;
  try {
    const WorldInfo w = discover_world();
    j = {{"source", w.source}, {"rank", w.rank}, {"size", w.size}, {"local_rank", w.local_rank},
         {"local_size", w.local_size}, {"host", w.host}};
  } catch (const std::exception& e) {
    j = {{"problem", e.what()}};
  }
  json slurm = json::object();
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    if (kv.rfind("SLURM_", 0) == 0 && kv.find('=') != std::string::npos)
      slurm[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
  }
  j["slurm"] = slurm;
  return j;
}

// The NUMA nodes with memory: numa.nodes[] (id, cpus, mem_total_bytes, mem_free_bytes, distances to
// every node listed, in order), or numa.problem when the kernel has none.
json numa_report() {
  std::string why;
  json nodes = json::array();
  for (const NumaNode& n : numa_nodes(&why))
    nodes.push_back({{"id", n.id}, {"cpus", n.cpus}, {"mem_total_bytes", n.mem_total_bytes},
                     {"mem_free_bytes", n.mem_free_bytes}, {"distances", n.distances}});
  json j = {{"nodes", nodes}};
  if (!why.empty()) j["problem"] = why;
  return j;
}

std::string limit_text(const json& v) { return v.get<long long>() < 0 ? "unlimited" : format_bytes(v.get<std::uint64_t>()); }

void print_text(const json& d) {
  const json& c = d["cpu"];
  std::string isa;
  for (const auto& x : c["isa"]) isa.append(isa.empty() ? "" : " ").append(x.get<std::string>());
  std::printf("cpu:      %s, %ld logical cores; %s%s; CPU Adam %s; oneDNN %s; heap %s\n", c["model"].get<std::string>().c_str(),
              c["logical_cores"].get<long>(), isa.c_str(), c["amx_bf16"].get<bool>() ? "" : " (no AMX: bf16 matmuls widen to fp32)",
              c["cpu_adam"].get<std::string>().c_str(), c["onednn"].get<std::string>().c_str(),
              c["heap"].get<std::string>().c_str());
  const json& g = d["gpu"];
  if (g["devices"].empty()) {
    std::printf("gpu:      none: %s\n", g["problem"].get<std::string>().empty() ? "the driver reports no GPU"
                                                                               : g["problem"].get<std::string>().c_str());
  } else {
    std::printf("gpu:      driver %s, %zu GPU%s\n", g["driver"].get<std::string>().c_str(), g["devices"].size(),
                g["devices"].size() == 1 ? "" : "s");
    for (std::size_t i = 0; i < g["devices"].size(); ++i) {
      const json& x = g["devices"][i];
      std::string peers;
      for (std::size_t j = 0; j < g["peer_access"][i].size(); ++j)
        if (j != i && g["peer_access"][i][j].get<bool>()) peers.append(" ").append(std::to_string(j));
      std::printf("          %zu: %s, %s, compute capability %s%s%s\n", i, x["name"].get<std::string>().c_str(),
                  format_bytes(x["memory_bytes"].get<std::uint64_t>()).c_str(),
                  x["compute_capability"].get<std::string>().c_str(), peers.empty() ? "" : ", peer access to", peers.c_str());
    }
  }
  auto lib = [](const json& l, const char* what) {
    const std::string v = l["version"].get<std::string>();
    return v.empty() ? std::string(what) + " not found" : std::string(what) + " " + v + " (" + l["library"].get<std::string>() + ")";
  };
  std::printf("cuda:     %s; %s; %s\n", lib(g["cuda_runtime"], "runtime").c_str(), lib(g["cublas"], "cuBLAS").c_str(),
              lib(g["nccl"], "NCCL").c_str());
  const json& dnn = g["cudnn"];
  const std::string dnn_problem = dnn["problem"].get<std::string>();
  const std::string dnn_text = dnn["version"].get<std::string>().empty() ? "cuDNN not found: " + dnn_problem
                               : !dnn_problem.empty()                    ? lib(dnn, "cuDNN") + "; " + dnn_problem
                                                                         : lib(dnn, "cuDNN") + ", NVRTC " +
                                                        dnn["nvrtc"].get<std::string>() + ": the attention can run on it";
  std::printf("cudnn:    %s\n", dnn_text.c_str());
  std::printf("          %s\n", g["cuda_training_in_this_build"].get<bool>()
                                ? "this build trains on cuda too (--device cuda)"
                                : "this build trains on the cpu only (configured without TZ_CUDA: no --device cuda)");
  const json& m = d["memlock"];
  std::printf("memlock:  RLIMIT_MEMLOCK soft %s, hard %s%s\n", limit_text(m["soft"]).c_str(), limit_text(m["hard"]).c_str(),
              m["root"].get<bool>() ? " (root: not limited)" : "; the host tier is locked in RAM up to the soft limit");
  const json& nm = d["numa"];
  if (nm["nodes"].empty()) std::printf("numa:     none: %s\n", nm.value("problem", std::string("no node with memory")).c_str());
  for (const auto& n : nm["nodes"]) {
    std::vector<int> cpus = n["cpus"].get<std::vector<int>>();
    std::string dist;
    for (const auto& x : n["distances"]) dist.append(dist.empty() ? "" : " ").append(std::to_string(x.get<int>()));
    std::printf("numa:     node %d: %s of %s free, cpus %s, distances %s (offload there: numa:%d)\n", n["id"].get<int>(),
                format_bytes(n["mem_free_bytes"].get<std::uint64_t>()).c_str(),
                format_bytes(n["mem_total_bytes"].get<std::uint64_t>()).c_str(),
                cpus.empty() ? "none (memory only)" : cores_text(cpus).c_str(), dist.c_str(), n["id"].get<int>());
  }
  if (d["nvme"].empty()) std::printf("nvme:     no --nvme-path given (tierzero doctor --nvme-path DIR checks one)\n");
  for (const auto& n : d["nvme"]) {
    const std::string fs = n["filesystem"].get<std::string>();
    const std::string where = fs.empty() ? "" : " (" + fs + ", " + format_bytes(n["free_bytes"].get<std::uint64_t>()) + " free)";
    std::printf("nvme:     %s: %s%s\n", n["path"].get<std::string>().c_str(),
                n["ok"].get<bool>() ? "io_uring and O_DIRECT work" : n["problem"].get<std::string>().c_str(), where.c_str());
  }
  std::printf("mpi:      %s; CUDA-aware: %s\n", d["mpi"]["library"].get<std::string>().c_str(),
              d["mpi"]["cuda_aware"].get<std::string>().c_str());
  const json& l = d["launcher"];
  if (l.contains("problem"))
    std::printf("launcher: %s\n", l["problem"].get<std::string>().c_str());
  else
    std::printf("launcher: %s, rank %d of %d (local %d of %d) on %s\n", l["source"].get<std::string>().c_str(),
                l["rank"].get<int>(), l["size"].get<int>(), l["local_rank"].get<int>(), l["local_size"].get<int>(),
                l["host"].get<std::string>().c_str());
  if (l["slurm"].empty()) {
    std::printf("slurm:    no SLURM_ variables (not inside a Slurm job)\n");
  } else {
    std::string vars;
    for (const char* k : {"SLURM_JOB_ID", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_CPUS_PER_TASK", "SLURM_JOB_NODELIST"})
      if (l["slurm"].contains(k)) vars.append(vars.empty() ? "" : ", ").append(k).append("=").append(l["slurm"][k].get<std::string>());
    std::printf("slurm:    %s\n", vars.c_str());
  }
}

struct DoctorFlags {
  std::vector<std::string> nvme;
  bool as_json = false;
};

po::options_description doctor_options(DoctorFlags& f) {
  po::options_description desc(
      "tierzero doctor: what this machine offers tierzero, each item checked (CPU, GPUs, CUDA libraries,\n"
      "locked memory, NUMA nodes, NVMe paths, MPI,\n"
      "launcher; docs/launching.md#tierzero-doctor); exit 1 when a check\n"
      "asked for (an --nvme-path) fails\n\nflags");
  desc.add_options()("help,h", "print this help")("nvme-path", po::value(&f.nvme)->composing(),
                                                   "check io_uring and O_DIRECT in this folder (repeatable)")(
      "json", po::bool_switch(&f.as_json), "print one JSON object instead of text");
  return desc;
}

}  // namespace

std::vector<FlagTable> doctor_flag_tables() { return {flag_table("doctor", doctor_options)}; }

int doctor_command(const std::vector<std::string>& args) {
  DoctorFlags f;
  po::options_description desc = doctor_options(f);
  const std::vector<std::string>& nvme = f.nvme;
  const bool& as_json = f.as_json;
  po::variables_map vm;
  if (!parse_args(args, desc, vm, "doctor")) return 0;
  const json d = {{"cpu", cpu_report()},     {"gpu", gpu_report()},
                  {"memlock", memlock_report()}, {"numa", numa_report()}, {"nvme", nvme_report(nvme)},
                  {"mpi", {{"library", mpi_library_version()}, {"cuda_aware", mpi_cuda_aware()}}},
                  {"launcher", launcher_report()}};
  if (as_json)
    std::printf("%s\n", d.dump(1).c_str());
  else
    print_text(d);
  std::fflush(stdout);
  // A check the command line asked for (each --nvme-path) that fails makes the exit status 1; what is
  // only reported (no GPU, no Slurm) does not.
  int failed = 0;
  for (const auto& n : d["nvme"])
    if (!n["ok"].get<bool>()) {
      std::fprintf(stderr, "tierzero doctor: --nvme-path %s failed its check: %s\n", n["path"].get<std::string>().c_str(),
                   n["problem"].get<std::string>().c_str());
      ++failed;
    }
  if (failed)
    std::fprintf(stderr, "tierzero doctor: %d of the %zu checks asked for failed (exit 1); fix them or give other paths\n",
                 failed, d["nvme"].size());
  return failed ? 1 : 0;
}

}  // namespace tz
