// `tierzero bench gpu-copy`: host-to-device and device-to-host GB/s through Backend::copy_async, from
// pinned (the host tier) and pageable memory, against the PCIe link's bandwidth.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>

#include "core/device.h"
#include "perf/gpu_limits.h"

namespace tz {

struct GpuCopyOptions {
  std::size_t bytes = std::size_t(256) << 20;  // per transfer
  int warmup = 2, iters = 10, rounds = 3;
};

// Per direction and host memory kind: GB/s (1e9 bytes/s) of one transfer after warm-up, and its
// fraction of the link; #wrong counts bytes that differ after a round trip (checked outside the timed
// loops). Returns one JSON object; prints a table unless quiet.
nlohmann::json run_gpu_copy_bench(Device& dev, const GpuLimits& limits, const GpuCopyOptions& opt,
                                  bool quiet);

}  // namespace tz
