// The step-time model's terms; the rules and their limits are in docs/planning.md.
#include "zero/step_time.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/adam_compressed.h"
#include "core/error.h"
#include "zero/numa_tier.h"
#include "zero/speculative_adam.h"

namespace tz {
namespace {

// One collective of `bytes` (the full buffer) over `world` ranks: the bytes each rank moves on the bus
// (ring algorithms: all-reduce 2(n-1)/n, reduce-scatter and all-gather (n-1)/n), plus a latency that
// grows with log2(n), as tree and hierarchical algorithms (NCCL's) keep it (a flat ring's would grow
// with n).
double collective_s(double bytes, int world, bool all_reduce, double bus_gbs, double latency_us) {
  if (world <= 1) return 0;  // one rank moves nothing (and a bus of 0 GB/s must not make that 0/0)
  const double factor = (all_reduce ? 2.0 : 1.0) * double(world - 1) / world;
  return latency_us * 1e-6 * std::max(1.0, std::log2(double(world))) + factor * bytes / (bus_gbs * 1e9);
}

std::string ms(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f ms", s * 1e3);
  return b;
}

std::string gb(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f GB", bytes / 1e9);
  return b;
}

// `bytes` moved at `rate` bytes per second (the hardware's `field`, scaled): 0 when nothing moves, and a
// refusal naming the field when something must move at a rate of 0, which would make the term unbounded.
double seconds_at(double bytes, double rate, const Hardware& hw, const char* field, const char* what) {
  if (bytes <= 0) return 0;
  TZ_CHECK(rate > 0, "hardware '", hw.name, "' gives ", field, " 0, but this plan moves ", gb(bytes), " of ", what,
           " at that rate, so its time would be unbounded; give ", field, " in the hardware file (or calibrate with "
           "`tierzero bench calibrate`), or choose a plan that does not use it");
  return bytes / rate;
}

// Every figure the prediction prints is finite (the rates are bounded and each division is guarded above;
// this says which term broke that, should a new one).
void check_finite(const StepPrediction& p) {
  for (const StepTerm& t : p.terms)
    TZ_CHECK(std::isfinite(t.seconds) && std::isfinite(t.exposed), "the step-time model's '", t.what,
             "' term is not a finite time on hardware '", p.hardware, "'; check the hardware file's rates");
  TZ_CHECK(std::isfinite(p.step_s) && p.step_s > 0 && std::isfinite(p.tokens_per_s) && std::isfinite(p.mfu),
           "the step-time prediction on hardware '", p.hardware, "' is not finite; check the hardware file's rates");
}

// A CPU rank's step rate (TFLOP/s) with `ranks` ranks on the node, each of hw.threads_per_rank threads (0:
// the node's cores shared evenly). A rank computes on the cores its threads use, at most its even share of
// the node's; calibrated at two points: every rank of calibrated_threads at once (step_tflops, the node's
// rate) and one rank alone on all the cores (solo_step_tflops). Between them straight in log2 of the cores,
// below the first in proportion to them (as without the second point, or with no core count: the node's
// rate shared by its ranks).
double cpu_rank_rate(const Hardware& hw, DType dt, int ranks) {
  const double node = hw.step_rate(dt);
  if (hw.cores <= 0) return node / ranks;
  const double even = double(hw.cores) / ranks;
  const double cores = hw.threads_per_rank > 0 ? std::min<double>(hw.threads_per_rank, even) : even;
  const double solo = hw.solo_step_tflops[rate_index(dt)];
  const int t_cal = hw.calibrated_threads;
  if (t_cal <= 0 || solo <= 0 || t_cal >= hw.cores || cores <= t_cal) return node * cores / hw.cores;
  const double at_cal = node * t_cal / hw.cores;  // each calibrated rank's
  return at_cal + (solo - at_cal) * std::log2(cores / t_cal) / std::log2(double(hw.cores) / t_cal);
}

// Bytes per second of NVMe states one rank of `rpn` on the node moves: the node's rate measured with every
// calibrated rank at once, shared; one rank alone, its solo rate; between (fewer ranks than calibrated),
// straight between the two in the ranks. Without a solo rate, the node's shared.
double nvme_states_rank_rate(const Hardware& hw, int rpn) {
  const double node = hw.nvme_states_gbs * 1e9, solo = hw.nvme_states_solo_gbs * 1e9;
  if (solo <= 0) return node / rpn;
  const int calibrated = hw.calibrated_threads > 0 && hw.cores > 0 ? std::max(1, hw.cores / hw.calibrated_threads) : 1;
  if (rpn >= calibrated) return (rpn == 1 ? solo : node) / rpn;
  return (solo + (node - solo) * (rpn - 1) / (calibrated - 1)) / rpn;
}

}  // namespace

double model_flops(const ModelConfig& c, int B, int T) {
  return double(B) * T * model_family(c).flops_per_token(c, T);
}

StepPrediction predict_step(const MemoryPlan& plan, const Hardware& hw, int accum) {
  TZ_CHECK(accum >= 1, "gradient accumulation must be at least 1");
  const PlanInputs& in = plan.in;
  const Placement& pl = plan.placement;
  const int W = in.world;
  StepPrediction p;
  p.hardware = hw.name;
  p.nodes = (W + hw.ranks_per_node - 1) / hw.ranks_per_node;
  const int rpn = std::min(W, hw.ranks_per_node);
  // Across nodes the network's rates bound every collective (`bench calibrate --network`'s per collective
  // where measured, else inter_gbs); with one rank per node nothing goes through the node's own path.
  const NetworkRates& net = hw.network;
  const double between = net.nodes > 0 ? net.all_reduce_gbs : hw.inter_gbs;
  const double bus = p.nodes <= 1 ? hw.intra_gbs : rpn > 1 ? std::min(hw.intra_gbs, between) : between;
  TZ_CHECK(W == 1 || bus > 0, "hardware '", hw.name, "' has no collective bandwidth (",
           p.nodes > 1 && hw.intra_gbs > 0 ? "inter_gbs" : "intra_gbs",
           " is 0); calibrate under mpirun -np 2 or give it in the file");
  // Each collective at its own measured rate where the calibration has one (in a node, the node's), else
  // the all-reduce bus; across nodes no faster than the network's rate for it.
  auto bus_of = [&](double kind_gbs, double net_gbs) {
    const double in_node = kind_gbs > 0 ? kind_gbs : hw.intra_gbs;
    if (p.nodes <= 1) return kind_gbs > 0 ? kind_gbs : bus;
    const double across = net.nodes > 0 ? net_gbs : hw.inter_gbs;
    return rpn > 1 ? std::min(in_node, across) : across;
  };
  const double rs_bus = bus_of(hw.reduce_scatter_gbs, net.reduce_scatter_gbs),
               ag_bus = bus_of(hw.all_gather_gbs, net.all_gather_gbs),
               ar_bus = bus_of(hw.all_reduce_gbs, net.all_reduce_gbs);
  // A collective across nodes waits the network's latency where it was measured (the larger of the two).
  const double latency_us =
      p.nodes > 1 && net.nodes > 0 ? std::max(hw.latency_us, net.latency_us) : hw.latency_us;
  const double wbytes = double(dtype_size(in.dtype));
  // On a CPU the collectives, copies and the optimizer run on the cores that compute: nothing is hidden.
  const bool host_is_device = device_traits(hw.device).unified_memory;
  const bool can_hide = !host_is_device;

  // Compute.
  const double flops = model_flops(in.model, in.shape.B, in.shape.T);
  const bool recompute = in.checkpointing != ActivationCheckpointing::off;
  // A CPU's rates are the node's, shared by the ranks on it; a GPU's are each device's. Ranks whose threads
  // use fewer of the node's cores than its rates were measured on get that fraction of them.
  const double used = host_is_device && hw.cores > 0 && hw.threads_per_rank > 0
                          ? std::min(1.0, double(hw.threads_per_rank) * rpn / hw.cores)
                          : 1.0;
  const double share = host_is_device ? double(rpn) / used : 1.0;
  const double rate = host_is_device ? cpu_rank_rate(hw, in.dtype, rpn) : hw.step_rate(in.dtype);
  // The FLOPs the rate is in: this model's, or (with a calibrated mix) the calibrated model's FLOPs times
  // the ratio of the two models' times, kind of work by kind (zero/step_mix.h).
  const bool mixed = host_is_device && hw.mix.measured(in.dtype);
  const double work = mixed
                          ? hw.mix.calibrated.model_flops *
                                hw.mix.time_ratio(compute_counts(in.model, in.shape.B, in.shape.T), in.dtype)
                          : flops;
  const double micro_compute = work * (recompute ? 4.0 / 3.0 : 1.0) / (rate * 1e12);
  StepTerm compute{"compute", micro_compute * accum, micro_compute * accum, ""};
  {
    char b[240];
    int n = std::snprintf(b, sizeof b, "%.1f GFLOP per micro-step%s at %.3g TFLOP/s", flops / 1e9,
                          recompute ? " (+ a recomputed forward)" : "", rate);
    if (mixed && n > 0 && std::size_t(n) < sizeof b) {
      const double* sh = hw.mix.share[rate_index(in.dtype)];
      std::snprintf(b + n, sizeof b - std::size_t(n),
                    ", timed as %.1f by the calibrated mix (products %.0f%%, attention "
                    "%.0f%%, the rest %.0f%%)",
                    work / 1e9, 100 * sh[0], 100 * sh[1], 100 * sh[2]);
    }
    compute.detail = b;
  }

  // Gradient reduction: the planned launches, every micro-step when gradients are sharded (stages 2-3),
  // else once per step.
  double reduce_once = 0, last_launch = 0, reduce_bytes = 0;
  for (int l = 0; l < plan.buckets.launches(); ++l) {
    const double elems = double(plan.buckets.stride[l]) * (plan.buckets.reduce_scatter ? W : 1);
    last_launch = plan.buckets.reduce_scatter ? collective_s(elems * 4, W, false, rs_bus, latency_us)
                                              : collective_s(elems * 4, W, true, ar_bus, latency_us);
    reduce_once += last_launch;
    reduce_bytes += elems * 4;
  }
  if (!pl.reduce) reduce_once = last_launch = reduce_bytes = 0;
  const bool every_micro = pl.any(&GroupPlacement::grads_sharded);
  const int reductions = every_micro ? accum : 1;
  // Stage 3: sharded groups gathered for forward and again for backward, every micro-step.
  double gather_micro = 0, gather_first = 0, regather = 0;
  int gathers_micro = 0, regathers = 0;
  for (int g = 0; g < plan.map.groups(); ++g) {
    const GroupPlacement& gp = pl.groups[g];
    const double bytes = double(plan.map.group(g).padded) * wbytes;
    if (gp.params_sharded) {
      const double t = collective_s(bytes, W, false, ag_bus, latency_us);
      gather_micro += 2 * t;
      gathers_micro += 2;
      if (gather_first == 0) gather_first = t;
    }
    if (gp.regather_after_step) {
      regather += collective_s(bytes, W, false, ag_bus, latency_us);
      ++regathers;
    }
  }
  // What runs while compute does: reductions launched during backward (overlap_comm) and prefetched
  // gathers. A GPU's copy engines and NCCL hide them behind compute; on a CPU they share its cores and
  // hide the calibrated fraction comm_overlap of it (negative: the contention costs more).
  const bool overlap = in.zero.overlap_comm && (can_hide || hw.comm_overlap != 0);
  const bool prefetch = in.zero.prefetch_bucket_size > 0 && (can_hide || hw.comm_overlap != 0);
  const double hide = can_hide ? 1.0 : hw.comm_overlap;
  const bool prefetch_io = can_hide && in.zero.prefetch_bucket_size > 0;  // fetches from the host and NVMe
  const double comm_micro_hideable = (overlap ? reduce_once * (every_micro ? 1 : 0) : 0) + (prefetch ? gather_micro : 0);
  StepTerm comm{"communication", reduce_once * reductions + gather_micro * accum + regather, 0, ""};
  {
    // Per micro-step, what can run behind that micro-step's compute; the first gather and the last
    // bucket always wait.
    const double unhideable = (prefetch ? gather_first : 0) + (overlap ? last_launch : 0);
    const double hidden_micro = hide * std::max(0.0, std::min(comm_micro_hideable - unhideable, micro_compute));
    double exposed = comm.seconds - hidden_micro * accum;
    if (!every_micro && overlap)  // the last micro-step's
      exposed -= hide * std::max(0.0, std::min(reduce_once - last_launch, micro_compute));
    comm.exposed = std::max(0.0, exposed);
    char b[200];
    std::snprintf(b, sizeof b, "%s per reduction x %d, %d launch%s; gathers %s per micro-step; after the step %s; bus %.0f GB/s",
                  gb(reduce_bytes).c_str(), reductions, plan.buckets.launches(), plan.buckets.launches() == 1 ? "" : "es",
                  ms(gather_micro).c_str(), ms(regather).c_str(), bus);
    comm.detail = W > 1 ? b : "one rank: none";
  }

  // Host-device traffic, the optimizer, NVMe.
  const double link = hw.link_gbs * 1e9, adam_rate = hw.cpu_adam_gbs * 1e9 / rpn * (host_is_device ? used : 1.0);
  double down = 0, up = 0, fetch_micro = 0, host_adam = 0, dev_adam = 0, nvme_opt_rw = 0, nvme_fetch_micro = 0,
         nvme_param_write = 0, spec_adam = 0;
  // The speculative CPU Adam runs the covered groups' updates during the last micro-step's backward,
  // each after saving its master, m, v and working params (read and written once more): it is hidden
  // up to that backward's length, in steps that need no clipping.
  const std::vector<bool> covered = SpeculativeAdam::covered(plan.optimizer());
  const double save_factor = 1.0 + 2.0 * (12.0 + wbytes) / (28.0 + wbytes);
  // States on a numa:N tier: the CPU Adam reads and writes their 12 bytes per element at the node's
  // rates (shared by the node's ranks), when those are slower than its own stream. Reads and writes
  // overlap (a CXL link is full duplex): the slower direction sets the node's time.
  std::string numa_note;
  auto node_rates = [&](Tier t) -> const NumaRates* {
    const int node = tier_numa_node(t);
    if (node < 0) return nullptr;
    const NumaRates* r = hw.numa_rates(node);
    const std::string note = r ? tier_name(t) + " read " + std::to_string(int(r->read_gbs)) + ", written " +
                                     std::to_string(int(r->write_gbs)) + " GB/s"
                               : tier_name(t) + " at the CPU Adam's rate (the hardware gives no rates for node " +
                                     std::to_string(node) + ")";
    if (numa_note.find(note) == std::string::npos) numa_note += (numa_note.empty() ? "" : "; ") + note;
    return r;
  };
  // Compressed states (issue 36): the CPU Adam at the format's calibrated time per parameter over fp32's.
  std::string format_note;
  double format_time = 1;
  if (in.offload.compressed_states()) {
    const std::string key = std::string(moment_format_name(in.offload.optimizer_states)) + "/" +
                            std::string(master_format_name(in.offload.master_weights));
    const auto it = hw.cpu_adam_format_time.find(key);
    if (it != hw.cpu_adam_format_time.end()) format_time = it->second;
    char b[160];
    if (it != hw.cpu_adam_format_time.end())
      std::snprintf(b, sizeof b, "states %s at %.2fx fp32's time per parameter", key.c_str(), format_time);
    else
      std::snprintf(b, sizeof b, "states %s at fp32's time per parameter (not calibrated on this hardware)",
                    key.c_str());
    format_note = b;
  }
  // Group g's master, m and v: 12 bytes an element in fp32, or the formats' bytes.
  auto state_bytes = [&](int g, double opt) {
    if (plan.compressed.empty()) return opt * 12;
    return double(plan.compressed[g].master_bytes() + 2 * plan.compressed[g].moment_array_bytes());
  };
  auto host_adam_s = [&](const GroupPlacement& gp, double bytes, double states) {
    double t = format_time * seconds_at(bytes, adam_rate, hw, "cpu_adam_gbs", "CPU Adam states");
    if (const NumaRates* r = node_rates(gp.master_home))
      t = std::max({t, states / (r->read_gbs * 1e9 / rpn), states / (r->write_gbs * 1e9 / rpn)});
    return t;
  };
  for (int g = 0; g < plan.map.groups(); ++g) {
    const GroupPlacement& gp = pl.groups[g];
    const double shard = double(plan.map.group(g).shard_count), opt = double(gp.opt_range.count);
    const double adam_bytes = opt * (28.0 + wbytes);
    if (in_host_memory(gp.update_on) && can_hide && covered[g]) {
      spec_adam += save_factor * host_adam_s(gp, adam_bytes, state_bytes(g, opt));
      // Sharded gradients come down every micro-step; at stages 0-1 the reduced gradient stays on the
      // device and the optimizer stages its range down once.
      down += (in_host_memory(gp.grad_home) && gp.grads_sharded ? accum * shard : opt) * 4;
      if (on_device(gp.params_home)) up += opt * wbytes;
    } else if (in_host_memory(gp.update_on)) {
      host_adam += host_adam_s(gp, adam_bytes, state_bytes(g, opt));
      // Sharded gradients come down every micro-step; at stages 0-1 the reduced gradient stays on the
      // device and the optimizer stages its range down once.
      down += (in_host_memory(gp.grad_home) && gp.grads_sharded ? accum * shard : opt) * 4;
      if (on_device(gp.params_home)) up += opt * wbytes;
    } else {
      // Compressed states on the device: the gradient and the working write, the states read and written.
      const double dev_bytes = plan.compressed.empty() ? adam_bytes : opt * (4 + wbytes) + 2 * state_bytes(g, opt);
      dev_adam += seconds_at(dev_bytes, hw.device_gbs * 1e9 / share, hw, "device_gbs", "AdamW states on the device");
    }
    // NVMe reads and writes every state of the range a step: 12 bytes an element in fp32, or the formats'.
    if (in_file(gp.master_home)) nvme_opt_rw += state_bytes(g, opt);
    if (in_host_memory(gp.params_home)) {
      const NumaRates* r = node_rates(gp.params_home);
      fetch_micro += seconds_at(2 * shard * wbytes, r ? std::min(link, r->read_gbs * 1e9 / rpn) : link, hw, "link_gbs",
                                "parameter fetches from the host");
    }
    if (in_file(gp.params_home)) {
      nvme_fetch_micro += 2 * shard * wbytes / (hw.nvme_read_gbs * 1e9 / rpn);
      nvme_param_write += shard * wbytes / (hw.nvme_write_gbs * 1e9 / rpn);
    }
  }
  TZ_CHECK(nvme_opt_rw + nvme_fetch_micro == 0 || (hw.nvme_read_gbs > 0 && hw.nvme_write_gbs > 0), "hardware '",
           hw.name, "' has no NVMe rates; calibrate with --nvme-path DIR or give nvme_read_gbs and nvme_write_gbs");
  const double host_link = seconds_at(down + up, link, hw, "link_gbs", "gradients and parameters between host and device");
  StepTerm host{"host <-> device", host_link + fetch_micro * accum, 0, ""};
  host.exposed = host_link + std::max(0.0, fetch_micro - (prefetch_io ? micro_compute : 0)) * accum;
  {
    char b[160];
    std::snprintf(b, sizeof b, "gradients down %s, parameters up %s, parameter fetches %s per micro-step at %.0f GB/s",
                  gb(down).c_str(), gb(up).c_str(), ms(fetch_micro).c_str(), hw.link_gbs);
    host.detail = b;
  }
  // The states' traffic at the rate calibrated on their own path (the swap ring, every rank at once) when
  // there is one, else at the store's sequential rates.
  const double nvme_io = nvme_opt_rw == 0              ? 0.0  // no NVMe states (and perhaps no NVMe rates: not 0/0)
                         : hw.nvme_states_gbs > 0 ? 2 * nvme_opt_rw / nvme_states_rank_rate(hw, rpn)
                                                  : nvme_opt_rw / (hw.nvme_read_gbs * 1e9 / rpn) +
                                                        nvme_opt_rw / (hw.nvme_write_gbs * 1e9 / rpn);
  // NVMe states stream through the CPU Adam sub-group by sub-group: the slower of the two sets the pace,
  // except on a CPU, where the I/O thread and its checksums take the cores the Adam runs on.
  const double optimizer_s =
      dev_adam + (nvme_opt_rw == 0 ? host_adam : can_hide ? std::max(host_adam, nvme_io) : host_adam + nvme_io);
  const double backward_s = micro_compute * (recompute ? 3.0 / 4.0 : 2.0 / 3.0);
  const double spec_exposed = std::max(0.0, spec_adam - backward_s);
  StepTerm optim{"optimizer", optimizer_s + spec_adam, optimizer_s + spec_exposed, ""};
  {
    char b[320];
    int n = std::snprintf(b, sizeof b, "AdamW on the device %s, CPU Adam %s at %.0f GB/s per rank, NVMe states %s (%s read + written)",
                          ms(dev_adam).c_str(), ms(host_adam).c_str(), adam_rate / 1e9, ms(nvme_io).c_str(),
                          gb(nvme_opt_rw).c_str());
    if (spec_adam > 0 && n > 0 && std::size_t(n) < sizeof b)
      std::snprintf(b + n, sizeof b - std::size_t(n), "; speculative CPU Adam %s behind a %s backward",
                    ms(spec_adam).c_str(), ms(backward_s).c_str());
    optim.detail = b;
    if (!numa_note.empty()) optim.detail += "; " + numa_note;
    if (!format_note.empty()) optim.detail += "; " + format_note;
  }
  StepTerm nvme{"nvme parameters", nvme_fetch_micro * accum + nvme_param_write, 0, ""};
  nvme.exposed = std::max(0.0, nvme_fetch_micro - (prefetch_io ? micro_compute : 0)) * accum + nvme_param_write;
  nvme.detail = "parameter shards read " + ms(nvme_fetch_micro) + " per micro-step, written " + ms(nvme_param_write);
  StepTerm scalars{"scalar reductions", 3 * collective_s(8, W, true, bus > 0 ? bus : 1, latency_us), 0,
                   "loss, norm, stop flag"};
  scalars.exposed = scalars.seconds;

  // Every collective the step waits on right after compute waits for the slowest rank: sync_us each (the
  // reductions, the gathers, the gathers after the step, the scalars), and the ranks' drift while they
  // compute, sync_fraction of the step's compute, however many waits divide it.
  const int waited = W > 1 ? plan.buckets.launches() * (pl.reduce ? reductions : 0) + gathers_micro * accum + regathers + 3 : 0;
  const double drift = W > 1 ? hw.sync_fraction * compute.seconds : 0;
  StepTerm sync{"synchronisation", waited * hw.sync_us * 1e-6 + drift, 0, ""};
  sync.exposed = sync.seconds;
  sync.detail = std::to_string(waited) + " collectives waited on, " + ms(hw.sync_us * 1e-6) + " each, and " +
                ms(drift) + " of drift";

  p.terms = {compute, comm, host, optim, nvme, scalars, sync};
  for (const StepTerm& t : p.terms) p.step_s += t.exposed;
  p.tokens_per_s = double(in.shape.B) * in.shape.T * accum * W / p.step_s;
  const double peak = hw.peak_tflops[rate_index(in.dtype)];
  p.mfu = peak > 0 ? flops * accum / p.step_s / (peak / share * 1e12) : 0;
  check_finite(p);
  return p;
}

std::string prediction_table(const StepPrediction& p) {
  std::string s = "predicted step (" + p.hardware + ", " + std::to_string(p.nodes) + " node" + (p.nodes == 1 ? "" : "s") +
                  "):\n";
  char line[400];
  for (const StepTerm& t : p.terms) {
    if (t.seconds == 0 && t.what != "compute") continue;
    std::snprintf(line, sizeof line, "  %-18s %11s  exposed %11s  (%s)\n", t.what.c_str(), ms(t.seconds).c_str(),
                  ms(t.exposed).c_str(), t.detail.c_str());
    s += line;
  }
  std::snprintf(line, sizeof line, "  %-18s %11s  %.0f tokens/s over all ranks%s", "step", ms(p.step_s).c_str(),
                p.tokens_per_s, p.mfu > 0 ? "" : "");
  s += line;
  if (p.mfu > 0) {
    std::snprintf(line, sizeof line, ", MFU %.1f%%", 100 * p.mfu);
    s += line;
  }
  return s;
}

nlohmann::json prediction_json(const StepPrediction& p) {
  nlohmann::json terms = nlohmann::json::object();
  for (const StepTerm& t : p.terms)
    terms[t.what] = {{"ms", t.seconds * 1e3}, {"exposed_ms", t.exposed * 1e3}, {"detail", t.detail}};
  return {{"hardware", p.hardware}, {"nodes", p.nodes},     {"step_ms", p.step_s * 1e3},
          {"tokens_per_s", p.tokens_per_s}, {"mfu", p.mfu}, {"terms", terms}};
}

}  // namespace tz
