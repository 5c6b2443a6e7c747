// `tierzero bench offload`: the optimizer step over an NVMe-resident shard, pipelined (read k+1 /
// Adam k / write k-1), against max(IO time, Adam time), each measured alone on the same shard.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace tz {

struct OffloadBenchOptions {
  std::size_t params = 50'000'000;  // elements of the shard (fp32 master, m, v on NVMe)
  std::string path = "/tmp";
  std::size_t sub_group_size = 4'000'000;
  int buffer_count = 4;
  std::size_t block_size = 1 << 20;
  int queue_depth = 32;
  int reps = 3;
};

nlohmann::json run_offload_bench(const OffloadBenchOptions& o, bool quiet);

}  // namespace tz
