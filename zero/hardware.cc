// Hardware presets: datasheet figures, and the assumptions a training step needs on top of them
// (the efficiency of a tuned step, achievable bus bandwidths), each stated in `source`.
#include "zero/hardware.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/adam_compressed.h"
#include "core/error.h"

namespace tz {
namespace {

constexpr std::size_t GiB = std::size_t(1) << 30;

// A DGX-like node of 8 GPUs: NVLink inside, one 400 Gb/s NIC per GPU between nodes (the network
// assumption), 2 sockets of DDR5.
Hardware gpu_node(std::string name, std::size_t mem, double bf16_peak, double fp32_peak, double hbm_gbs) {
  Hardware h;
  h.name = std::move(name);
  h.ranks_per_node = 8;
  h.device_bytes = mem;
  h.host_bytes = 2048 * GiB;
  h.nvme_bytes = 30'000 * GiB;
  h.peak_tflops[0] = fp32_peak, h.peak_tflops[1] = bf16_peak, h.peak_tflops[2] = bf16_peak;
  // Model-FLOP utilisation of a tuned GPT step: 45% of the bf16/fp16 tensor-core peak (Megatron-LM and
  // llm.c report 40-55% on A100/H100 at these sizes); fp32 without TF32 runs on the CUDA cores at ~60%.
  h.step_tflops[0] = 0.6 * fp32_peak, h.step_tflops[1] = 0.45 * bf16_peak, h.step_tflops[2] = 0.45 * bf16_peak;
  h.device_gbs = 0.8 * hbm_gbs;
  h.cpu_adam_gbs = 300;  // ~half of 2 sockets x 8 channels of DDR5-4800 (614 GB/s): the CPU Adam's stream
  h.link_gbs = 50;       // PCIe Gen5 x16: 64 GB/s per direction, ~50 achieved
  h.nvme_read_gbs = 25, h.nvme_write_gbs = 12;  // 8 U.2 Gen4 drives striped, conservative
  h.intra_gbs = 360;     // NVLink 4 (450 GB/s per direction): nccl-tests all-reduce bus bandwidth on 8 GPUs
  h.inter_gbs = 45;      // 400 Gb/s = 50 GB/s per GPU, ~90% achieved
  h.latency_us = 25;
  return h;
}

}  // namespace

double Hardware::step_rate(DType dt) const {
  const double r = step_tflops[rate_index(dt)];
  TZ_CHECK(r > 0, "hardware '", name, "' has no ", dtype_name(dt), " rate (step_tflops.", dtype_name(dt), " is 0: ",
           dtype_name(dt), " is not supported there); choose another --dtype, or give the rate in the hardware file");
  return r;
}

std::vector<std::string> hardware_preset_names() {
  return {"h100-80g", "h200-141g", "gh200", "a100-40g", "v100-32g", "cpu-node"};
}

Hardware hardware_preset(const std::string& name) {
  if (name == "h100-80g") {
    Hardware h = gpu_node(name, 80 * GiB, 989, 67, 3350);
    h.source = "NVIDIA H100 SXM5 datasheet (989 TFLOP/s bf16 dense, 67 fp32, 3.35 TB/s HBM3, NVLink 900 GB/s, "
               "PCIe Gen5) in a DGX H100 node (8 GPUs, 8x 400 Gb/s, 2 TB DDR5, 8x 3.84 TB NVMe)";
    return h;
  }
  if (name == "h200-141g") {
    Hardware h = gpu_node(name, 141 * GiB, 989, 67, 4800);
    h.source = "NVIDIA H200 SXM datasheet (989 TFLOP/s bf16 dense, 67 fp32, 4.8 TB/s HBM3e, NVLink 900 GB/s) in a "
               "DGX H200 node (8 GPUs, 8x 400 Gb/s, 2 TB DDR5, 8x 3.84 TB NVMe)";
    return h;
  }
  if (name == "gh200") {
    Hardware h = gpu_node(name, 96 * GiB, 989, 67, 4000);
    h.ranks_per_node = 1;
    h.host_bytes = 480 * GiB;
    h.cpu_adam_gbs = 250;  // LPDDR5X up to 512 GB/s, 72 Grace cores
    h.link_gbs = 400;      // NVLink-C2C 900 GB/s total, 450 per direction
    h.nvme_bytes = 8'000 * GiB;
    h.nvme_read_gbs = 12, h.nvme_write_gbs = 6;
    h.intra_gbs = 45;  // one GPU per node: every collective crosses the network
    h.source = "NVIDIA GH200 Grace Hopper Superchip datasheet (H100 compute, 96 GB HBM3 at 4 TB/s, 480 GB LPDDR5X "
               "at up to 512 GB/s, NVLink-C2C 900 GB/s), one superchip per node, 400 Gb/s per node, 2 NVMe drives";
    return h;
  }
  if (name == "a100-40g") {
    Hardware h = gpu_node(name, 40 * GiB, 312, 19.5, 1555);
    h.host_bytes = 1024 * GiB;
    h.cpu_adam_gbs = 200;  // 2 sockets of DDR4-3200, 8 channels each (410 GB/s)
    h.link_gbs = 25;       // PCIe Gen4 x16
    h.nvme_bytes = 15'000 * GiB;
    h.nvme_read_gbs = 20, h.nvme_write_gbs = 10;
    h.intra_gbs = 230;  // NVLink 3 (300 GB/s per direction)
    h.inter_gbs = 22;   // 200 Gb/s HDR per GPU
    h.source = "NVIDIA A100 SXM4 40GB datasheet (312 TFLOP/s bf16 dense, 19.5 fp32, 1.555 TB/s HBM2, NVLink 600 "
               "GB/s, PCIe Gen4) in a DGX A100 node (8 GPUs, 8x 200 Gb/s HDR, 1 TB DDR4, 4x 3.84 TB NVMe)";
    return h;
  }
  if (name == "v100-32g") {
    Hardware h = gpu_node(name, 32 * GiB, 125, 15.7, 900);
    h.step_tflops[1] = 0;  // no bf16 on Volta
    h.peak_tflops[1] = 0;
    h.host_bytes = 512 * GiB;
    h.cpu_adam_gbs = 100;  // 2 sockets of DDR4-2666, 6 channels each (256 GB/s)
    h.link_gbs = 12;       // PCIe Gen3 x16
    h.nvme_bytes = 8'000 * GiB;
    h.nvme_read_gbs = 6, h.nvme_write_gbs = 3;
    h.intra_gbs = 110;  // NVLink 2 hybrid cube mesh (DGX-1)
    h.inter_gbs = 6;    // 4x 100 Gb/s EDR per 8 GPUs
    h.source = "NVIDIA V100 SXM2 32GB datasheet (125 TFLOP/s fp16 tensor, 15.7 fp32, 900 GB/s HBM2, NVLink 300 "
               "GB/s, PCIe Gen3; no bf16) in a DGX-1 node (8 GPUs, 4x 100 Gb/s EDR, 512 GB DDR4)";
    return h;
  }
  if (name == "cpu-node") {
    Hardware h;
    h.name = name;
    h.device = DeviceKind::cpu;
    h.ranks_per_node = 2;  // one rank per socket
    h.device_bytes = 256 * GiB;
    h.host_bytes = 512 * GiB;
    h.nvme_bytes = 4'000 * GiB;
    // 2x 56-core Xeon 8480+ (2.0 GHz): AVX-512 fp32 peak 7.2 TFLOP/s and AMX bf16 ~115 per socket; a
    // training step reaches ~25% of fp32 and ~15% of AMX on oneDNN (assumed, not measured: no AMX here).
    h.peak_tflops[0] = 7.2, h.peak_tflops[1] = 115, h.peak_tflops[2] = 7.2;
    h.step_tflops[0] = 1.8, h.step_tflops[1] = 17, h.step_tflops[2] = 1.8;
    h.device_gbs = 150;  // per socket: 8 channels DDR5-4800 = 307 GB/s, ~half for a stream
    h.cpu_adam_gbs = 300;
    h.link_gbs = 100;    // the "host tier" is the same memory: a memcpy
    h.nvme_read_gbs = 12, h.nvme_write_gbs = 6;
    h.intra_gbs = 20;    // MPI shared memory between sockets
    h.inter_gbs = 12;    // 200 Gb/s per node shared by 2 ranks: 25 GB/s / 2
    h.latency_us = 10;
    h.source = "Intel Xeon Platinum 8480+ specifications (56 cores, 2.0 GHz, AVX-512 and AMX, 8 channels DDR5-4800) "
               "x2 per node, 200 Gb/s network; step efficiencies assumed";
    return h;
  }
  std::string names;
  for (const auto& n : hardware_preset_names()) names += (names.empty() ? "" : ", ") + n;
  TZ_FAIL("unknown hardware '", name, "': use a preset (", names,
          "), local (this machine's `tierzero bench calibrate` results), or a JSON file");
}

int rate_index(DType dt) { return dt == DType::f32 ? 0 : dt == DType::bf16 ? 1 : 2; }

nlohmann::json Hardware::to_json() const {
  nlohmann::json j = {
      {"name", name},
      {"source", source},
      {"device", device_kind_name(device)},
      {"ranks_per_node", ranks_per_node},
      {"cores", cores},
      {"device_bytes", device_bytes},
      {"host_bytes", host_bytes},
      {"nvme_bytes", nvme_bytes},
      {"step_tflops", {{"fp32", step_tflops[0]}, {"bf16", step_tflops[1]}, {"fp16", step_tflops[2]}}},
      {"peak_tflops", {{"fp32", peak_tflops[0]}, {"bf16", peak_tflops[1]}, {"fp16", peak_tflops[2]}}},
      {"calibrated_threads", calibrated_threads},
      {"solo_step_tflops",
       {{"fp32", solo_step_tflops[0]}, {"bf16", solo_step_tflops[1]}, {"fp16", solo_step_tflops[2]}}},
      {"device_gbs", device_gbs},
      {"cpu_adam_gbs", cpu_adam_gbs},
      {"link_gbs", link_gbs},
      {"nvme_read_gbs", nvme_read_gbs},
      {"nvme_write_gbs", nvme_write_gbs},
      {"nvme_states_gbs", nvme_states_gbs},
      {"nvme_states_solo_gbs", nvme_states_solo_gbs},
      {"intra_gbs", intra_gbs},
      {"inter_gbs", inter_gbs},
      {"latency_us", latency_us},
      {"reduce_scatter_gbs", reduce_scatter_gbs},
      {"all_gather_gbs", all_gather_gbs},
      {"all_reduce_gbs", all_reduce_gbs},
      {"sync_us", sync_us},
      {"sync_fraction", sync_fraction},
      {"comm_overlap", comm_overlap},
      {"cast_gbs", cast_gbs},
      {"numa",
       [&] {
         nlohmann::json a = nlohmann::json::array();
         for (const NumaRates& r : numa)
           a.push_back({{"node", r.node}, {"read_gbs", r.read_gbs}, {"write_gbs", r.write_gbs}});
         return a;
       }()},
      {"memory",
       {{"comm_piece_bytes", memory.comm_piece_bytes},
        {"comm_temporaries",
         [&] {
           nlohmann::json a = nlohmann::json::array();
           for (const CommTemporaries& c : memory.comm) a.push_back({{"ranks", c.ranks}, {"bytes", c.bytes}});
           return a;
         }()},
        {"comm_between_nodes_bytes", memory.comm_between_nodes},
        {"libraries_bytes", memory.libraries},
        {"libraries_products", memory.products},
        {"heap_allocator", memory.heap}}}};
  if (mix.calibrated.model_flops > 0) j["step_mix"] = step_mix_json(mix);  // since issue 33
  if (!cpu_adam_format_time.empty()) j["cpu_adam_format_time"] = cpu_adam_format_time;  // since issue 36
  if (network.nodes > 0)                                                   // since issue 33
    j["network"] = {{"nodes", network.nodes},
                    {"reduce_scatter_gbs", network.reduce_scatter_gbs},
                    {"all_gather_gbs", network.all_gather_gbs},
                    {"all_reduce_gbs", network.all_reduce_gbs},
                    {"latency_us", network.latency_us}};
  return j;
}

void MemoryLines::add_comm(int ranks, double bytes) {
  auto it = std::find_if(comm.begin(), comm.end(), [&](const CommTemporaries& c) { return c.ranks >= ranks; });
  if (it != comm.end() && it->ranks == ranks)
    it->bytes = bytes;
  else
    comm.insert(it, {ranks, bytes});
}

void MemoryLines::set_comm_piece_bytes(double piece) {
  if (comm_piece_bytes != piece) {
    comm.clear();
    comm_between_nodes = -1;
  }
  comm_piece_bytes = piece;
}

double MemoryLines::comm_at(int ranks, std::string* how) const {
  auto say = [&](std::string s) {
    if (how) *how = std::move(s);
  };
  if (comm.empty()) return -1;
  for (const CommTemporaries& c : comm)
    if (c.ranks == ranks) {
      say("measured at " + std::to_string(ranks) + " ranks");
      return c.bytes;
    }
  if (comm.size() == 1) {
    say("measured at " + std::to_string(comm[0].ranks) + " ranks only, not scaled");
    return comm[0].bytes;
  }
  // The two nearest sizes: the ones around `ranks`, or the two at the end it lies beyond.
  std::size_t hi = 1;
  while (hi + 1 < comm.size() && comm[hi].ranks < ranks) ++hi;
  const CommTemporaries &a = comm[hi - 1], &b = comm[hi];
  const double v = a.bytes + (b.bytes - a.bytes) * double(ranks - a.ranks) / double(b.ranks - a.ranks);
  say("on the line through the measurements at " + std::to_string(a.ranks) + " and " + std::to_string(b.ranks) + " ranks");
  double least = comm.front().bytes;
  for (const CommTemporaries& c : comm) least = std::min(least, c.bytes);
  return std::max(v, least);
}

const NumaRates* Hardware::numa_rates(int node) const {
  for (const NumaRates& r : numa)
    if (r.node == node) return &r;
  return nullptr;
}

Hardware Hardware::from_json(const nlohmann::json& j, const std::string& src) {
  Hardware h;
  // Each number in its own unit, bounded before it is converted: sizes to 2^56 bytes (64 PiB), rates to
  // 1e9 GB/s or TFLOP/s and, when not 0 (not given), from 1e-3 (so no time the plan prints overflows), the
  // latency to 1e9 us, ranks per node to 2^20 (a whole number).
  constexpr double kMaxBytes = 72057594037927936.0, kMaxRate = 1e9, kMinRate = 1e-3;
  auto shown = [](double x) {
    char b[32];
    std::snprintf(b, sizeof b, x == std::floor(x) && std::fabs(x) < 1e18 ? "%.0f" : "%g", x);
    return std::string(b);
  };
  auto num = [&](const char* key, double lo, double hi) {
    TZ_CHECK(j.contains(key) && j[key].is_number(), src, ": hardware field '", key, "' is missing or not a number");
    const double v = j[key].get<double>();
    TZ_CHECK(std::isfinite(v) && v >= lo && v <= hi, src, ": hardware field '", key, "' must be a number in [", shown(lo),
             ", ", shown(hi), "], got ", v);
    return v;
  };
  auto rate = [&](const char* key) {  // 0 (not given), or a rate the plan's times stay finite at
    const double v = num(key, 0, kMaxRate);
    TZ_CHECK(v == 0 || v >= kMinRate, src, ": hardware field '", key, "' is ", v, ": give 0 (not measured) or a rate of at "
             "least ", kMinRate, " (GB/s or TFLOP/s)");
    return v;
  };
  TZ_CHECK(j.is_object(), src, ": a hardware description is a JSON object");
  for (const char* key : {"name", "source"})
    TZ_CHECK(!j.contains(key) || j[key].is_string(), src, ": hardware field '", key, "' must be a string");
  TZ_CHECK(!j.contains("cpu") || j["cpu"].is_boolean(), src, ": hardware field 'cpu' must be true or false");
  TZ_CHECK(!j.contains("device") || j["device"].is_string(), src,
           ": hardware field 'device' must be a device name (cpu or cuda)");
  h.name = j.value("name", std::string("custom"));
  h.source = j.value("source", src);
  // "device" names the device; files written before it say "cpu": true for the host.
  h.device = j.value("cpu", false) ? DeviceKind::cpu : DeviceKind::cuda;
  if (j.contains("device")) {
    try {
      h.device = parse_device_kind(j["device"].get<std::string>());
    } catch (const Error& e) {
      TZ_FAIL(src, ": hardware field 'device': ", e.what());
    }
  }
  const double ranks = num("ranks_per_node", 1, 1 << 20);
  TZ_CHECK(ranks == std::floor(ranks), src, ": hardware field 'ranks_per_node' must be a whole number, got ", ranks);
  h.ranks_per_node = int(ranks);
  if (j.contains("cores")) {  // written by calibrations since issue 19
    const double cores = num("cores", 0, 1 << 20);
    TZ_CHECK(cores == std::floor(cores), src, ": hardware field 'cores' must be a whole number, got ", cores);
    h.cores = int(cores);
  }
  if (j.contains("calibrated_threads")) {  // since issue 33; optional
    const double t = num("calibrated_threads", 0, 1 << 20);
    TZ_CHECK(t == std::floor(t), src, ": hardware field 'calibrated_threads' must be a whole number, got ", t);
    h.calibrated_threads = int(t);
  }
  h.device_bytes = std::size_t(num("device_bytes", 0, kMaxBytes));
  h.host_bytes = std::size_t(num("host_bytes", 0, kMaxBytes));
  h.nvme_bytes = std::size_t(num("nvme_bytes", 0, kMaxBytes));
  const char* dts[3] = {"fp32", "bf16", "fp16"};
  for (const char* field : {"step_tflops", "peak_tflops", "solo_step_tflops"}) {
    if (std::string(field) == "solo_step_tflops" && !j.contains(field)) continue;  // since issue 33; optional
    TZ_CHECK(j.contains(field) && j[field].is_object(), src, ": hardware field '", field,
             "' must be an object {\"fp32\": ..., \"bf16\": ..., \"fp16\": ...}");
    for (int i = 0; i < 3; ++i) {
      const nlohmann::json& v = j[field].value(dts[i], nlohmann::json(0.0));
      TZ_CHECK(v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0 && v.get<double>() <= kMaxRate &&
                   (v.get<double>() == 0 || v.get<double>() >= kMinRate),
               src, ": hardware field '", field, ".", dts[i], "' must be 0 (not supported) or a number in [", kMinRate, ", ",
               shown(kMaxRate), "]");
      (std::string(field) == "step_tflops"   ? h.step_tflops
       : std::string(field) == "peak_tflops" ? h.peak_tflops
                                             : h.solo_step_tflops)[i] = v.get<double>();
    }
  }
  h.device_gbs = rate("device_gbs");
  h.cpu_adam_gbs = rate("cpu_adam_gbs");
  h.link_gbs = rate("link_gbs");
  h.nvme_read_gbs = rate("nvme_read_gbs");
  h.nvme_write_gbs = rate("nvme_write_gbs");
  h.intra_gbs = rate("intra_gbs");
  h.inter_gbs = rate("inter_gbs");
  h.latency_us = num("latency_us", 0, 1e9);
  // Since issue 33; optional (0: not measured).
  for (auto [key, field] : {std::pair{"reduce_scatter_gbs", &h.reduce_scatter_gbs}, std::pair{"all_gather_gbs", &h.all_gather_gbs},
                            std::pair{"all_reduce_gbs", &h.all_reduce_gbs}, std::pair{"cast_gbs", &h.cast_gbs},
                            std::pair{"nvme_states_gbs", &h.nvme_states_gbs},
                            std::pair{"nvme_states_solo_gbs", &h.nvme_states_solo_gbs}})
    if (j.contains(key)) *field = rate(key);
  if (j.contains("sync_us")) h.sync_us = num("sync_us", 0, 1e9);
  if (j.contains("sync_fraction")) h.sync_fraction = num("sync_fraction", 0, 1);
  if (j.contains("comm_overlap")) h.comm_overlap = num("comm_overlap", -10, 1);
  if (j.contains("step_mix") && !j["step_mix"].is_null())
    h.mix = step_mix_from_json(j["step_mix"], src);  // issue 33
  if (j.contains("cpu_adam_format_time")) {          // since issue 36; optional
    const nlohmann::json& f = j["cpu_adam_format_time"];
    TZ_CHECK(f.is_object(), src,
             ": hardware field 'cpu_adam_format_time' must be an object {\"int8/bf16-sr\": T, ...}");
    for (const auto& [key, v] : f.items()) {
      const std::size_t slash = key.find('/');
      TZ_CHECK(slash != std::string::npos, src, ": hardware field 'cpu_adam_format_time' key '", key,
               "' must be STATES/MASTER (\"int8/bf16-sr\")");
      try {
        parse_moment_format(key.substr(0, slash), "cpu_adam_format_time");
        parse_master_format(key.substr(slash + 1), "cpu_adam_format_time");
      } catch (const Error& e) {
        TZ_FAIL(src, ": hardware field 'cpu_adam_format_time' key '", key, "': ", e.what());
      }
      TZ_CHECK(v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0.01 &&
                   v.get<double>() <= 1000,
               src, ": hardware field 'cpu_adam_format_time.", key,
               "' must be a number in [0.01, 1000] (times fp32's)");
      h.cpu_adam_format_time[key] = v.get<double>();
    }
  }
  if (j.contains("network") && !j["network"].is_null()) {  // since issue 33; optional
    const nlohmann::json& n = j["network"];
    TZ_CHECK(n.is_object(), src,
             ": hardware field 'network' must be an object (what `tierzero bench calibrate --network` "
             "writes)");
    auto field = [&](const char* key, double lo, double hi) {
      TZ_CHECK(n.contains(key) && n[key].is_number() && std::isfinite(n[key].get<double>()) &&
                   n[key].get<double>() >= lo && n[key].get<double>() <= hi,
               src, ": hardware field 'network.", key, "' must be a number in [", shown(lo), ", ", shown(hi),
               "]");
      return n[key].get<double>();
    };
    const double nodes = field("nodes", 2, 1 << 20);
    TZ_CHECK(nodes == std::floor(nodes), src, ": hardware field 'network.nodes' must be a whole number, got ",
             nodes);
    h.network.nodes = int(nodes);
    h.network.reduce_scatter_gbs = field("reduce_scatter_gbs", kMinRate, kMaxRate);
    h.network.all_gather_gbs = field("all_gather_gbs", kMinRate, kMaxRate);
    h.network.all_reduce_gbs = field("all_reduce_gbs", kMinRate, kMaxRate);
    h.network.latency_us = field("latency_us", 0, 1e9);
  }
  if (j.contains("numa")) {  // since issue 20; optional
    TZ_CHECK(j["numa"].is_array(), src, ": hardware field 'numa' must be a list of {\"node\": N, \"read_gbs\": R, \"write_gbs\": W}");
    for (const nlohmann::json& e : j["numa"]) {
      TZ_CHECK(e.is_object(), src, ": each entry of hardware field 'numa' must be {\"node\": N, \"read_gbs\": R, \"write_gbs\": W}");
      auto field = [&](const char* key, double hi) {
        TZ_CHECK(e.contains(key) && e[key].is_number(), src, ": hardware field 'numa' entry ", e.dump(), ": '", key,
                 "' is missing or not a number");
        const double v = e[key].get<double>();
        TZ_CHECK(std::isfinite(v) && v >= 0 && v <= hi, src, ": hardware field 'numa' entry ", e.dump(), ": '", key,
                 "' must be a number in [0, ", shown(hi), "], got ", v);
        return v;
      };
      NumaRates r;
      const double node = field("node", 1023);
      TZ_CHECK(node == std::floor(node), src, ": hardware field 'numa': node ", node, " is not a whole number");
      r.node = int(node);
      r.read_gbs = field("read_gbs", kMaxRate);
      r.write_gbs = field("write_gbs", kMaxRate);
      TZ_CHECK(r.read_gbs >= kMinRate && r.write_gbs >= kMinRate, src, ": hardware field 'numa': node ", r.node,
               " needs read_gbs and write_gbs of at least ", kMinRate);
      TZ_CHECK(!h.numa_rates(r.node), src, ": hardware field 'numa' gives node ", r.node, " twice");
      h.numa.push_back(r);
    }
  }
  if (j.contains("memory")) {  // since issue 33; optional (-1: not measured)
    const nlohmann::json& m = j["memory"];
    TZ_CHECK(m.is_object(), src, ": hardware field 'memory' must be an object (what `tierzero bench calibrate` writes)");
    auto field = [&](const char* key, double lo, double hi, bool whole) {
      const nlohmann::json& v = m.value(key, nlohmann::json(lo));
      TZ_CHECK(v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= lo && v.get<double>() <= hi &&
                   (!whole || v.get<double>() == std::floor(v.get<double>())),
               src, ": hardware field 'memory.", key, "' must be a ", whole ? "whole " : "", "number in [", shown(lo), ", ",
               shown(hi), "]");
      return v.get<double>();
    };
    h.memory.comm_piece_bytes = field("comm_piece_bytes", 0, kMaxBytes, true);
    h.memory.libraries = field("libraries_bytes", -1, kMaxBytes, false);
    // Since the temporaries between nodes (issue 33); -1 or absent: not measured.
    h.memory.comm_between_nodes = field("comm_between_nodes_bytes", -1, kMaxBytes, false);
    h.memory.products = int(field("libraries_products", 0, 1 << 20, true));
    if (m.contains("heap_allocator")) {
      const nlohmann::json& a = m["heap_allocator"];
      TZ_CHECK(a.is_string() && a.get<std::string>().size() <= 64 &&
                   a.get<std::string>().find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789._+-") == std::string::npos,
               src, ": hardware field 'memory.heap_allocator' must be an allocator's name (\"tcmalloc\", \"glibc\"), as "
               "`tierzero bench calibrate` writes it");
      h.memory.heap = a.get<std::string>();
    }
    if (m.contains("comm_temporaries")) {
      const nlohmann::json& a = m["comm_temporaries"];
      TZ_CHECK(a.is_array(), src, ": hardware field 'memory.comm_temporaries' must be a list of {\"ranks\": N, \"bytes\": B}");
      for (const nlohmann::json& e : a) {
        TZ_CHECK(e.is_object() && e.contains("ranks") && e.contains("bytes") && e["ranks"].is_number() &&
                     e["bytes"].is_number(),
                 src, ": hardware field 'memory.comm_temporaries' entry ", e.dump(), " must be {\"ranks\": N, \"bytes\": B}");
        const double r = e["ranks"].get<double>(), b = e["bytes"].get<double>();
        TZ_CHECK(std::isfinite(r) && r >= 2 && r <= (1 << 20) && r == std::floor(r), src,
                 ": hardware field 'memory.comm_temporaries': ranks ", e["ranks"].dump(), " must be a whole number of at least 2");
        TZ_CHECK(std::isfinite(b) && b >= 0 && b <= kMaxBytes, src, ": hardware field 'memory.comm_temporaries': bytes ",
                 e["bytes"].dump(), " at ", int(r), " ranks must be a number in [0, ", shown(kMaxBytes), "]");
        TZ_CHECK(std::none_of(h.memory.comm.begin(), h.memory.comm.end(),
                              [&](const CommTemporaries& c) { return c.ranks == int(r); }),
                 src, ": hardware field 'memory.comm_temporaries' gives ", int(r), " ranks twice");
        h.memory.add_comm(int(r), b);
      }
    }
    TZ_CHECK(h.memory.comm.empty() || h.memory.comm_piece_bytes > 0, src,
             ": hardware field 'memory.comm_temporaries' needs the 'comm_piece_bytes' it was measured at");
    TZ_CHECK(
        h.memory.comm_between_nodes < 0 || h.memory.comm_piece_bytes > 0, src,
        ": hardware field 'memory.comm_between_nodes_bytes' needs the 'comm_piece_bytes' it was measured at");
    TZ_CHECK(h.memory.libraries < 0 || h.memory.products > 0, src,
             ": hardware field 'memory.libraries_bytes' needs the 'libraries_products' it was measured over");
  }
  return h;
}

}  // namespace tz
