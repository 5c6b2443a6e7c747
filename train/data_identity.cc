// data_identity: XXH3-64 over evenly spaced blocks of a token file (and the older first-and-last-MiB form).
#include "train/data_identity.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "model/file_io.h"
#include "train/train_options.h"

namespace tz {
namespace {

std::string describe(std::uint64_t size, const char* how, std::uint64_t hash) {
  char b[80];
  std::snprintf(b, sizeof b, "%llu bytes, %s %016llx", static_cast<unsigned long long>(size), how,
                static_cast<unsigned long long>(hash));
  return b;
}

}  // namespace

std::string data_identity(const std::string& path) {
  if (path.empty()) return "none";
  if (path == kDefaultData) return "default corpus";
  InputFile f(path, "token file");
  const std::uint64_t n = f.size(), B = kIdentityBlockBytes, K = kIdentityBlocks;
  std::vector<char> bytes(std::min(n, K * B));  // 4 MiB at most
  if (n <= K * B) {
    f.read_at(bytes.data(), n, 0);
  } else {
    // Block k starts at k (n - B) / (K - 1), computed as k q + k r / (K - 1) with q, r the quotient and
    // remainder of (n - B) / (K - 1), which cannot overflow: the first starts at 0, the last ends at n.
    const std::uint64_t q = (n - B) / (K - 1), r = (n - B) % (K - 1);
    for (std::uint64_t k = 0; k < K; ++k) f.read_at(bytes.data() + k * B, B, k * q + k * r / (K - 1));
  }
  const std::uint64_t h = XXH3_64bits(bytes.data(), bytes.size());
  return describe(n, "sampled xxh3", h);
}

std::string data_identity_first_last_mib(const std::string& path) {
  if (path.empty()) return "none";
  if (path == kDefaultData) return "default corpus";
  InputFile f(path, "token file");
  const std::uint64_t n = f.size(), head = std::min<std::uint64_t>(n, 1 << 20),
                      tail = std::min<std::uint64_t>(n - head, 1 << 20);
  std::string bytes(head + tail, '\0');
  f.read_at(bytes.data(), head, 0);
  f.read_at(bytes.data() + head, tail, n - tail);
  return describe(n, "xxh3", XXH3_64bits(bytes.data(), bytes.size()));
}

std::string data_identity_as_recorded(const std::string& recorded, const std::string& path) {
  const bool old = recorded.find(" bytes, xxh3 ") != std::string::npos;
  return old ? data_identity_first_last_mib(path) : data_identity(path);
}

}  // namespace tz
