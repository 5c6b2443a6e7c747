// Copy benchmark: one device buffer, a pinned and a pageable host buffer of the same size; each
// direction timed on one stream, then a round trip compared byte for byte.
#include "perf/gpu_copy_bench.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/backend.h"
#include "core/error.h"
#include "perf/timing.h"

namespace tz {
namespace {

// Bytes that differ from word to word (splitmix64 of the word index), cheap enough for 256 MiB.
void fill_bytes(std::uint8_t* p, std::size_t n) {
  for (std::size_t w = 0; w * 8 < n; ++w) {
    std::uint64_t z = (w + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    std::memcpy(p + w * 8, &z, std::min<std::size_t>(8, n - w * 8));
  }
}

}  // namespace

nlohmann::json run_gpu_copy_bench(Device& dev, const GpuLimits& limits, const GpuCopyOptions& opt,
                                  bool quiet) {
  TZ_CHECK(opt.bytes >= 1 && opt.iters >= 1 && opt.rounds >= 1 && opt.warmup >= 0,
           "--bytes, --iters and --rounds must be at least 1");
  Backend& be = dev.backend();
  auto stream = dev.create_stream();
  Stream& s = *stream;
  const std::size_t n = opt.bytes;
  Buffer<std::uint8_t> device(dev, n, "copy device buffer"),
      back(dev.allocator(MemoryKind::pageable_host), n, "copy check");
  const bool has_link = !dev.traits().unified_memory;
  const double link = has_link ? limits.link.gb_per_s : 0;
  nlohmann::json out = {{"bench", "gpu-copy"},
                        {"device", device_kind_name(dev.kind())},
                        {"gpu", limits.gpu.to_json()},
                        {"bytes", n},
                        // Why the pinned buffers are not locked, "" when they are: unlocked, they copy at the
                        // pageable rate.
                        {"pin_error", dev.pin_error()},
                        {"link", has_link ? limits.link.to_json() : nlohmann::json(nullptr)},
                        {"link_gb_per_s", link > 0 ? nlohmann::json(link) : nlohmann::json(nullptr)},
                        {"timing", "host clock around " + std::to_string(opt.iters) +
                                       " copies + stream synchronize, median of " +
                                       std::to_string(opt.rounds) + " rounds; GB/s = 1e9 bytes/s"},
                        {"rows", nlohmann::json::array()}};
  if (!quiet) {
    char limit[512] = "none (the cpu device: copies are memcpy)";
    if (has_link)
      std::snprintf(limit, sizeof limit, "%.1f GB/s per direction, PCIe %.0f GT/s x%d (%s)", link,
                    limits.link.gt_per_s, limits.link.width, limits.link.source.c_str());
    std::printf("bench gpu-copy: %s, %.0f MiB per copy; limit: %s\n",
                limits.gpu.name.empty() ? device_kind_name(dev.kind()).c_str() : limits.gpu.name.c_str(),
                double(n) / (1 << 20), limit);
    if (!dev.pin_error().empty())
      std::printf("  the pinned buffers are not locked: %s\n", dev.pin_error().c_str());
  }
  long long wrong = 0;
  double pinned_min = 0;
  for (MemoryKind kind : {MemoryKind::pinned_host, MemoryKind::pageable_host}) {
    Buffer<std::uint8_t> host(dev.allocator(kind), n, "copy " + memory_kind_name(kind) + " buffer");
    // Touch every page before timing: a first touch inside the timed copy would measure page faults.
    fill_bytes(host.data(), n);
    std::memset(back.data(), 0, n);
    const double h2d_ms = bench::ms_per_call(s, opt.warmup, opt.iters, opt.rounds,
                                             [&] { be.copy_async(s, device.data(), host.data(), n); });
    const double d2h_ms = bench::ms_per_call(s, opt.warmup, opt.iters, opt.rounds,
                                             [&] { be.copy_async(s, host.data(), device.data(), n); });
    // Round trip through the device into a third buffer: the bytes must come back unchanged.
    be.copy_async(s, device.data(), host.data(), n);
    be.copy_async(s, back.data(), device.data(), n);
    s.synchronize();
    long long w = 0;
    for (std::size_t i = 0; i < n; ++i) w += host.data()[i] != back.data()[i];
    wrong += w;
    for (const char* dir : {"h2d", "d2h"}) {
      const double ms = std::string(dir) == "h2d" ? h2d_ms : d2h_ms, gbs = double(n) / (ms * 1e-3) / 1e9;
      if (kind == MemoryKind::pinned_host) pinned_min = pinned_min == 0 ? gbs : std::min(pinned_min, gbs);
      out["rows"].push_back(
          {{"direction", dir},
           {"host_memory", kind == MemoryKind::pinned_host ? "pinned" : "pageable"},
           {"ms", ms},
           {"gb_per_s", gbs},
           {"fraction_of_link", link > 0 ? nlohmann::json(gbs / link) : nlohmann::json(nullptr)},
           {"wrong", w}});
      if (!quiet)
        std::printf(
            "  %s %-8s %8.3f ms %7.2f GB/s%s  #wrong %lld\n", dir,
            kind == MemoryKind::pinned_host ? "pinned" : "pageable", ms, gbs,
            link > 0 ? ("  " + std::to_string(int(100 * gbs / link + 0.5)) + "% of the link").c_str() : "",
            w);
    }
  }
  out["pinned_min_gb_per_s"] = pinned_min;
  out["pinned_min_fraction_of_link"] = link > 0 ? nlohmann::json(pinned_min / link) : nlohmann::json(nullptr);
  out["wrong"] = wrong;
  return out;
}

}  // namespace tz
