// A machine described by the rates the step-time model needs: per-device memory and compute, the
// host and NVMe of a node, the host-device link and the network inside and between nodes. Named
// presets (with their sources in docs/planning.md) or a file written by `tierzero bench calibrate`.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/device_traits.h"
#include "core/dtype.h"
#include "zero/step_mix.h"

namespace tz {

// A NUMA node's memory as the CPU Adam streams it (a CXL expander or a CPU-less node behind a numa:N
// tier): GB/s read and written by the node's nearest CPUs, per node (hardware file key "numa":
// [{"node": N, "read_gbs": R, "write_gbs": W}], written by `tierzero bench calibrate`).
struct NumaRates {
  int node = 0;
  double read_gbs = 0, write_gbs = 0;
  bool operator==(const NumaRates&) const = default;
};

// Open MPI's temporaries and shared-memory transport growth one rank saw while reductions and gathers ran
// in pieces of MemoryLines::comm_piece_bytes (kReducingPiecesInFlight in flight), with `ranks` ranks on the node.
struct CommTemporaries {
  int ranks = 0;
  double bytes = 0;
  bool operator==(const CommTemporaries&) const = default;
};

// What a rank holds outside its planned buffers that only a measurement on the machine can say (the
// hardware file's "memory", written by `tierzero bench calibrate`): bytes of host memory. The memory plan's
// lines of the same names scale them to the run (docs/planning.md#outside-the-buffers).
struct MemoryLines {
  double comm_piece_bytes = 0;        // the pieces the communication lines were measured at
  std::vector<CommTemporaries> comm;  // one per world size measured, ascending; none: not measured
  // The same growth with the ranks on separate nodes, one per node, over the network's transport (TCP: its
  // socket buffers and fragments), as `tierzero bench calibrate --network` measures it (since issue 33; -1:
  // not measured). The plan holds it, not `comm`, for a run across nodes.
  double comm_between_nodes = -1;
  // oneDNN's kernels (JIT code) and the OpenMP threads' stacks while `products` distinct matrix products
  // ran once each (-1: not measured).
  double libraries = -1;
  int products = 0;
  // The heap allocator that served malloc while they were measured (core/heap.h: "tcmalloc", "glibc"; empty:
  // not recorded, a file from before issue 33's heap change): the lines hold for a binary with the same one.
  std::string heap;
  bool operator==(const MemoryLines&) const = default;
  // The communication temporaries at `ranks` ranks: the measurement at that size, else the straight line
  // through the two nearest (never below the least measured), else the one there is; -1 when none.
  // `how` says which.
  double comm_at(int ranks, std::string* how = nullptr) const;
  void add_comm(int ranks, double bytes);  // replaces a measurement at the same size
  // The communication lines (in a node and between nodes) are now measured at pieces of `piece` bytes:
  // those measured at another size are dropped.
  void set_comm_piece_bytes(double piece);
};

// The collectives between nodes as `tierzero bench calibrate --network` measures them (since issue 33; the
// hardware file's "network"), one rank per node: each collective's bus rate in training's pieces and the
// latency of a small all-reduce. 0: not measured (the model then uses inter_gbs and latency_us).
struct NetworkRates {
  double reduce_scatter_gbs = 0, all_gather_gbs = 0, all_reduce_gbs = 0, latency_us = 0;
  int nodes = 0;  // the nodes they were measured across
  bool operator==(const NetworkRates&) const = default;
};

struct Hardware {
  std::string name, source;
  // The device each rank trains on; its traits say whether it is the host (CPU training: device copies are
  // memcpys, nothing hides behind compute, the node's rates are shared by its ranks).
  DeviceKind device = DeviceKind::cuda;
  int ranks_per_node = 1;    // devices (ranks) per node
  // A CPU node: the cores its rates were measured on (a calibration's ranks x threads; 0: unknown, the
  // rates are the whole node's), and the compute threads each rank of the run predicted uses (a run
  // setting, `plan --threads-per-rank`; 0: the node's cores shared by its ranks). Ranks using fewer
  // cores than were measured get that share of the node's compute and memory rates.
  int cores = 0;
  int threads_per_rank = 0;
  std::size_t device_bytes = 0;      // memory per device
  std::size_t host_bytes = 0;        // host memory per node
  std::size_t nvme_bytes = 0;        // NVMe capacity per node
  // Achievable whole-step compute rate per device in TFLOP/s of model FLOPs (peak x an efficiency a
  // tuned training step reaches; measured on a CPU), for fp32, bf16 and fp16 (0: not supported).
  double step_tflops[3] = {0, 0, 0};
  double peak_tflops[3] = {0, 0, 0};  // the datasheet's dense matmul peak (for MFU)
  // A CPU node (since issue 33; 0: not measured): the OpenMP threads each rank had while step_tflops was
  // measured, and the step rate of one rank computing alone with all `cores` threads: how a rank's
  // products scale with its own threads (a narrow model's do not double from one thread to two).
  int calibrated_threads = 0;
  double solo_step_tflops[3] = {0, 0, 0};
  // A CPU node (since issue 33; not measured: every model FLOP at the step rate): the calibration model's
  // forward + backward split into products, attention and the rest, to time other shapes (zero/step_mix.h).
  StepMix mix;
  double device_gbs = 0;     // device memory bandwidth (the device AdamW)
  double cpu_adam_gbs = 0;   // CPU Adam traffic per node (memory bound), bytes per second / 1e9
  // The CPU Adam on compressed states (since issue 36; a format not here: fp32's time): its time per
  // parameter over the fp32 step's, by "states/master" ("int8/bf16-sr"), as `bench adam
  // --optimizer-states S --master-weights M` reads it beside the fp32 step.
  std::map<std::string, double> cpu_adam_format_time;
  double link_gbs = 0;       // host <-> device per device per direction
  double nvme_read_gbs = 0, nvme_write_gbs = 0;  // per node
  // The optimizer's NVMe states as training moves them (since issue 33; 0: not measured, the model uses
  // nvme_read_gbs and nvme_write_gbs): bytes read and written per second per node / 1e9 through the swap
  // ring, every rank of the node at once (`tierzero bench offload`'s IO alone), whose unit-by-unit reads
  // and writes beside the other ranks' get a fraction of a sequential stream's rate.
  double nvme_states_gbs = 0;
  // The same path with one rank alone while the others wait (since issue 33; 0: not measured): one rank's
  // unit-by-unit reads and writes keep fewer requests in flight than the node's ranks together, and get less
  // of the disk than nvme_states_gbs (a one-rank node's rate; between one rank and the calibrated ranks,
  // straight between the two).
  double nvme_states_solo_gbs = 0;
  double intra_gbs = 0;      // collective bus bandwidth per rank inside a node
  double inter_gbs = 0;      // per rank between nodes
  double latency_us = 0;     // fixed cost of one collective
  NetworkRates network;      // between nodes, measured (inter_gbs is then its all-reduce rate)
  // Measured by calibrate since issue 33 (0: not measured; the model then uses intra_gbs, no sync cost,
  // no overlap and no cast term). Each collective's own bus rate in a node, in the training's pieces:
  double reduce_scatter_gbs = 0, all_gather_gbs = 0, all_reduce_gbs = 0;
  // The wait for the slowest rank that a collective waited on right after compute costs beyond latency_us:
  // sync_us each, plus sync_fraction of the compute before it (ranks sharing cores drift apart while they
  // compute, so the wait grows with the compute; over a step, sync_fraction of all of its compute).
  double sync_us = 0;
  double sync_fraction = 0;
  // Where compute and collectives share the cores (a CPU node): the fraction of the shorter of the two that
  // runs concurrently when a collective is in flight during compute, as measured (negative: the progress
  // threads' contention costs more than running them one after the other).
  double comm_overlap = 0;
  double cast_gbs = 0;  // fp32 <-> bf16/fp16 casts, bytes read + written per second per node / 1e9
  std::vector<NumaRates> numa;  // per NUMA node; none: a numa:N tier gets the CPU Adam's rate
  MemoryLines memory;           // measured by calibrate; presets: not measured

  const NumaRates* numa_rates(int node) const;  // nullptr when not given

  double step_rate(DType dt) const;  // step_tflops for a working dtype; throws when not supported
  nlohmann::json to_json() const;
  static Hardware from_json(const nlohmann::json& j, const std::string& source);
};

// The index of a working dtype in the per-dtype arrays above (step_tflops, peak_tflops, ...): fp32 0, bf16 1,
// fp16 2.
int rate_index(DType dt);

std::vector<std::string> hardware_preset_names();
// A preset by name; throws listing the presets for an unknown one.
Hardware hardware_preset(const std::string& name);

}  // namespace tz
