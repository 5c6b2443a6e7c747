// `tierzero bench io` (see io_bench.h): one NvmeStore shard written then read sequentially through
// rotating pinned arenas, timed, then checked.
#include "perf/io_bench.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <span>

#include "core/error.h"
#include "core/memory_budget.h"
#include "core/host_memory.h"

namespace tz {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Incompressible, cheap to make: xorshift64* words (the disk may compress or dedupe zeros).
void fill_pattern(std::byte* p, std::size_t bytes, std::uint64_t seed) {
  std::uint64_t x = seed | 1;
  for (std::size_t i = 0; i + 8 <= bytes; i += 8) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    std::uint64_t v = x * 0x2545F4914F6CDD1Dull;
    std::memcpy(p + i, &v, 8);
  }
}

}  // namespace

nlohmann::json run_io_bench(const IoBenchOptions& opt, bool quiet) {
  TZ_CHECK(opt.size > 0 && opt.size % kDirectIoAlign == 0, "--size must be a positive multiple of 4 KiB");
  TZ_CHECK(opt.chunks >= 2, "need at least 2 arena chunks so one can be refilled while another is in flight");
  // Extents start on block boundaries, so a chunk is a whole number of blocks.
  const std::uint64_t chunk = std::max<std::uint64_t>(
      opt.block_size, opt.buffer_bytes / opt.chunks / opt.block_size * opt.block_size);
  const std::uint64_t arena = chunk * opt.chunks;

  // The arenas outlive the store: its ring holds them registered until it is torn down.
  AlignedBuffer src(arena, Pinning::best_effort), dst(arena, Pinning::best_effort);
  NvmeStoreOptions so;
  so.paths = {opt.path};
  so.rank = 0;
  so.bytes = opt.size;
  so.block_size = opt.block_size;
  so.queue_depth = opt.queue_depth;
  so.checksums = opt.checksums;
  so.run_id = detail::concat("bench-", ::getpid());
  NvmeStore store(so);

  fill_pattern(src.data(), src.bytes(), 0x9e3779b97f4a7c15ull);
  std::memset(dst.data(), 0, dst.bytes());  // fault the pages in before the clock starts
  std::span<std::byte> regions[] = {{src.data(), src.bytes()}, {dst.data(), dst.bytes()}};
  std::string fixed_error = store.register_buffers(regions);

  // One timed pass: extent i uses arena slot i % chunks; at most `chunks` extents are outstanding.
  auto pass = [&](IoOp op) {
    std::deque<IoHandle> inflight;
    auto t0 = std::chrono::steady_clock::now();
    for (std::uint64_t off = 0, i = 0; off < opt.size; off += chunk, ++i) {
      if (inflight.size() == std::size_t(opt.chunks)) {
        inflight.front().wait();
        inflight.pop_front();
      }
      std::uint64_t n = std::min(chunk, opt.size - off);
      std::byte* slot = (op == IoOp::write ? src.data() : dst.data()) + (i % opt.chunks) * chunk;
      inflight.push_back(op == IoOp::write ? store.write(off, slot, n) : store.read(off, slot, n));
    }
    for (auto& h : inflight) h.wait();
    return seconds_since(t0);
  };
  const double write_s = pass(IoOp::write);
  const double read_s = pass(IoOp::read);

  // Outside the timed passes: the last extent read into each slot must equal the slot it was written from.
  const std::uint64_t nextents = (opt.size + chunk - 1) / chunk;
  std::uint64_t wrong = 0, checked = 0;
  for (std::uint64_t i = nextents > std::uint64_t(opt.chunks) ? nextents - opt.chunks : 0; i < nextents;
       ++i) {
    std::uint64_t n = std::min(chunk, opt.size - i * chunk);
    const std::byte* want = src.data() + (i % opt.chunks) * chunk;
    const std::byte* got = dst.data() + (i % opt.chunks) * chunk;
    for (std::uint64_t b = 0; b < n; b += opt.block_size, ++checked)
      wrong += std::memcmp(want + b, got + b, std::min<std::uint64_t>(opt.block_size, n - b)) != 0;
  }

  const UringStats st = store.stats();
  nlohmann::json j;
  j["bench"] = "io";
  j["path"] = opt.path;
  j["size"] = opt.size;
  j["block_size"] = opt.block_size;
  j["queue_depth"] = opt.queue_depth;
  j["checksums"] = opt.checksums == Checksums::on;
  j["arena_bytes"] = arena;
  j["chunk_bytes"] = chunk;
  j["pinned"] = src.pinned() && dst.pinned();
  j["fixed_buffers"] = store.fixed_buffers();
  if (!fixed_error.empty()) j["fixed_buffers_error"] = fixed_error;
  j["write_s"] = write_s;
  j["read_s"] = read_s;
  j["write_gbps"] = double(opt.size) / write_s / 1e9;
  j["read_gbps"] = double(opt.size) / read_s / 1e9;
  j["blocks_checked"] = checked;
  j["wrong"] = wrong;
  j["short_completions"] = st.short_completions;
  j["retries"] = st.retries;
  if (!quiet) {
    std::printf("tierzero bench io: %s, %s shard, block %s, queue depth %u, checksums %s, %s buffers%s%s\n",
                opt.path.c_str(), format_bytes(opt.size).c_str(), format_bytes(opt.block_size).c_str(),
                opt.queue_depth, opt.checksums == Checksums::on ? "on" : "off",
                store.fixed_buffers() ? "registered" : "plain", fixed_error.empty() ? "" : " (",
                fixed_error.empty() ? "" : (fixed_error + ")").c_str());
    std::printf("%-6s %14s %9s %8s\n", "op", "bytes", "seconds", "GB/s");
    std::printf("%-6s %14llu %9.3f %8.3f\n", "write", (unsigned long long)opt.size, write_s,
                double(opt.size) / write_s / 1e9);
    std::printf("%-6s %14llu %9.3f %8.3f\n", "read", (unsigned long long)opt.size, read_s,
                double(opt.size) / read_s / 1e9);
    std::printf("#wrong %llu of %llu blocks compared; short completions %llu, retries %llu\n",
                (unsigned long long)wrong, (unsigned long long)checked,
                (unsigned long long)st.short_completions, (unsigned long long)st.retries);
  }
  return j;
}

}  // namespace tz
