// `tierzero bench comm`: bandwidth of the MPI Communicator's collectives in the style of nccl-tests,
// each size next to the same call made straight through blocking MPI (the limit).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <vector>

#include "comm/mpi_comm.h"

namespace tz {

struct CommBenchOptions {
  std::vector<Collective> collectives{Collective::all_reduce, Collective::reduce_scatter,
                                      Collective::all_gather};
  std::size_t min_bytes = std::size_t(1) << 10;
  std::size_t max_bytes = std::size_t(256) << 20;  // sizes double from min_bytes up to this
  DType dtype = DType::f32;
  int warmup_iters = 5;
  int iters = 20;
  std::size_t piece_bytes = std::size_t(4) << 20;  // the communicator's pieces, as training's default
};

// Bus-bandwidth factor (nccl-tests' PERFORMANCE.md): busbw = algbw x factor, where algbw = size /
// time and size is the full message (the all-reduce buffer, the reduce-scatter input, the all-gather
// output). For n ranks: all-reduce 2(n-1)/n (each rank sends and receives that fraction of the
// message in a ring: reduce-scatter then all-gather), reduce-scatter and all-gather (n-1)/n. busbw
// is comparable across world sizes and against the link's bandwidth.
double bus_bandwidth_factor(Collective c, int n);

// Runs every collective at every size on all ranks of `comm` (a collective call); rank 0 prints a
// table unless quiet. Returns the rows as one JSON object (on every rank, with global #wrong and the
// slowest rank's time).
nlohmann::json run_comm_bench(MpiCommunicator& comm, const CommBenchOptions& opt, bool quiet);

}  // namespace tz
