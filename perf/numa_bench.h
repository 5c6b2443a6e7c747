// `tierzero bench numa`: each NUMA node's memory as a numa:N tier uses it. Per node, with a buffer bound
// to the node and the OpenMP team on the node's nearest CPUs (as the CPU Adam runs there): the stream
// rates (a fill and a sum: the limit) and the CPU Adam updating master, m and v that live on the node
// (the gradient and the fp32 working copy in ordinary host memory, as training stages them), in GB/s of
// the Adam's 32 bytes per element, next to the same Adam with everything in ordinary host memory.
// `tierzero bench calibrate` takes the stream rates into the hardware file.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>

namespace tz {

struct NumaBenchOptions {
  std::size_t stream_bytes = std::size_t(256) << 20;  // per node, less where the node has less free / 4
  std::size_t adam_elements = std::size_t(8) << 20;   // 32 bytes each: 256 MiB of traffic per step
  int reps = 5;                                       // timed repetitions (medians), after one untimed
  bool adam = true;                                   // calibrate needs only the stream rates
};

// Rows {node, cpus, bytes, read_gbs, write_gbs, adam_gbs, adam_host_gbs} in node order, the ISA and the
// thread count; prints a table unless quiet. Empty rows where the kernel has no NUMA support.
nlohmann::json run_numa_bench(const NumaBenchOptions& opt, bool quiet);

}  // namespace tz
