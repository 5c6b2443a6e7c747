// The memory plan's lines outside its buffers: what a rank holds that no PlannedBuffers allocation is
// (docs/planning.md#outside-the-buffers).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "comm/communicator.h"
#include "core/device_traits.h"
#include "zero/memory_plan.h"

namespace tz {
namespace {

std::string mib(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f MiB", bytes / (1 << 20));
  return b;
}

}  // namespace

std::vector<PlanLine> outside_lines(const MemoryPlan& p) {
  const PlanInputs& in = p.in;
  std::vector<PlanLine> v;
  if (in.data_bytes)
    v.push_back({"data loader", Tier::host, in.data_bytes,
                 "planned: the tokens held (4 bytes each) and each epoch's window order"});
  const MemoryLines& m = in.measured;
  const std::string where = in.measured_source.empty() ? "the hardware file" : in.measured_source;
  const bool host_collectives = device_traits(in.device).collectives == DeviceCollectives::host;
  if (in.world > 1 && host_collectives) {
    // The largest reduction a step makes: a gradient bucket's reduce-scatter (its whole message) or all-reduce.
    std::size_t largest = 0;
    for (int l = 0; l < p.buckets.launches(); ++l)
      largest = std::max(largest, p.buckets.stride[l] * (p.buckets.reduce_scatter ? std::size_t(in.world) : 1) * 4);
    const std::size_t piece = in.zero.comm_piece_bytes;
    if (piece == 0) {
      v.push_back({"communication temporaries", Tier::host, (p.buckets.reduce_scatter ? 2 : 1) * largest,
                   "derived from Open MPI 4.1's libnbc, which allocates twice a reduce-scatter's message and once an "
                   "all-reduce's (--comm-piece-bytes 0: whole messages, unbounded by pieces)"});
    } else {
      if (p.buckets.reduce_scatter && largest > piece)
        v.push_back({"communication staging", Tier::host, comm_staging_bytes(piece),
                     "planned: the communicator packs " + std::to_string(kReducingPiecesInFlight) +
                         " reduce-scatter pieces of --comm-piece-bytes"});
      // Measured at the calibrated piece size and at this world size (or on the line through two others:
      // Open MPI's shared-memory transport grows with the ranks). A run whose pieces (or whole reductions)
      // are another size moves libnbc's part, twice a reduce-scatter piece per piece in flight, by the
      // difference. Across nodes: the network transport's, measured one rank per node, plus the shared-memory
      // transport's at the node's ranks when there are several (libnbc's part then counted in both: an upper
      // bound).
      const double used = double(std::min(piece, std::max<std::size_t>(largest, 1)));
      const int per_node = in.ranks_per_node > 0 ? std::min(in.ranks_per_node, in.world) : in.world;
      const bool across = per_node < in.world;
      std::string how;
      double at = -1;
      if (across && m.comm_between_nodes >= 0) {
        at = m.comm_between_nodes;
        how = "between nodes (bench calibrate --network, one rank per node)";
        if (per_node > 1) {
          std::string local;
          const double shared = m.comm_at(per_node, &local);
          if (shared >= 0) {
            at += shared;
            how += ", plus " + mib(shared) + " in a node (" + local +
                   "; libnbc's part counted twice: an upper bound)";
          } else {
            how += "; in a node not measured";
          }
        }
      } else {
        at = m.comm_at(in.world, &how);
        if (across && at >= 0)
          how += " in one node; between nodes not measured (`tierzero bench calibrate --network`)";
      }
      if (at >= 0) {
        const double moved = 2.0 * kReducingPiecesInFlight * (used - m.comm_piece_bytes);
        const double bytes = std::max(0.0, at + moved);
        v.push_back({"communication temporaries", Tier::host, std::size_t(bytes),
                     "measured by bench calibrate (" + where + "): " + mib(at) + " " + how + ", at pieces of " +
                         mib(m.comm_piece_bytes) +
                         (moved != 0 ? "; " + std::string(moved > 0 ? "plus " : "less ") + mib(std::abs(moved)) +
                                           " for pieces of " + mib(used) + " (twice a piece per piece in flight)"
                                     : "")});
      } else {
        v.push_back({"communication temporaries", Tier::host, 0,
                     "not measured: run `tierzero bench calibrate` under mpirun on this machine"});
      }
    }
  }
  if (in.world > 1 && !host_collectives) {
    // NCCL's buffers: not measured on a GPU yet, so derived from its documentation
    // (docs/planning.md#outside-the-buffers; kNcclBufferBytes).
    v.push_back({"nccl buffers", Tier::device, kNcclBufferBytes,
                 "derived from NCCL's documentation, not measured: NCCL_BUFFSIZE (4 MiB) for each of a ring's send "
                 "and receive connections to its 2 neighbours, on " + std::to_string(kNcclChannels) + " channels"});
  }
  if (host_collectives) {
    const ModelFamily& family = model_family(in.model);
    const std::size_t products = family.gemm_shapes(in.model, in.shape, in.precision().act).size();
    if (m.libraries >= 0)
      v.push_back({"libraries", Tier::host, std::size_t(m.libraries * double(products) / m.products),
                   "measured by bench calibrate (" + where + "): " + mib(m.libraries) + " over " +
                       std::to_string(m.products) + " matrix products, scaled to this model's " +
                       std::to_string(products) +
                       (m.heap.empty() ? "; the heap it was measured with is not recorded (a calibration from before "
                                         "tierzero's heap was tcmalloc: run `tierzero bench calibrate` again)"
                                       : "; measured with the " + m.heap + " heap")});
    else
      v.push_back({"libraries", Tier::host, 0, "not measured: run `tierzero bench calibrate` on this machine"});
  }
  return v;
}

}  // namespace tz
