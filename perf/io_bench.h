// `tierzero bench io`: sequential write then read of one NVMe-store shard through NvmeStore (io_uring,
// O_DIRECT, checksums), in GB/s, to set next to fio at the same block size and queue depth.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "offload/nvme_store.h"

namespace tz {

struct IoBenchOptions {
  std::string path = "/tmp";                      // where the store's per-run directory goes
  std::uint64_t size = std::uint64_t(4) << 30;    // the shard: written once, then read once
  std::size_t block_size = std::size_t(1) << 20;  // aio.block_size
  unsigned queue_depth = 8;                       // aio.queue_depth
  Checksums checksums = Checksums::on;
  // Pinned, registered staging arenas (one to write from, one to read into), each cut into `chunks`
  // extents that rotate: an arena slot is reused once the extent that used it has been waited, so
  // the engine always has the next extents queued, as the swap pipeline has.
  std::uint64_t buffer_bytes = std::uint64_t(256) << 20;
  int chunks = 4;
};

// Runs the benchmark; prints a table to stdout unless quiet and returns the figures as one JSON
// object. GB/s is 1e9 bytes per second (fio's "MB/s" / 1000). Timed: one pass each, write then read,
// no fsync (as fio without --fsync/--end_fsync). Checked outside the timed passes: the bytes of the
// last extent read into each arena slot against what was written (#wrong counts differing blocks);
// with checksums on, every block read was also verified against its write-time XXH3.
nlohmann::json run_io_bench(const IoBenchOptions& opt, bool quiet);

}  // namespace tz
