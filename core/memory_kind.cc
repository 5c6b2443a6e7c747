// The memory kinds: the three built in, and the registry of pinned host pools.
#include <mutex>

#include "core/allocator.h"
#include "core/error.h"

namespace tz {
namespace {

struct Pools {
  std::mutex mu;
  std::vector<std::string> names;  // pool i is memory kind 3 + i
  std::vector<int> nodes;          // its NUMA node, or -1
};

Pools& pools() {
  static Pools* p = new Pools;  // never destroyed: devices may outlive static destruction order
  return *p;
}

constexpr int kFirstPool = 3;

}  // namespace

MemoryKind register_host_pool(const std::string& name, int numa_node) {
  Pools& p = pools();
  std::lock_guard<std::mutex> lock(p.mu);
  TZ_CHECK(!name.empty(), "a host memory pool needs a name");
  for (int k = 0; k < kFirstPool; ++k)
    TZ_CHECK(name != memory_kind_name(MemoryKind(k)), "host memory pool name '", name, "' is a built-in memory kind");
  for (const std::string& n : p.names) TZ_CHECK(n != name, "host memory pool '", name, "' is registered already");
  TZ_CHECK(kFirstPool + int(p.names.size()) < kMaxMemoryKinds, "at most ", kMaxMemoryKinds - kFirstPool,
           " host memory pools can be registered; '", name, "' is one too many");
  p.names.push_back(name);
  p.nodes.push_back(numa_node < 0 ? -1 : numa_node);
  return MemoryKind(kFirstPool + int(p.names.size()) - 1);
}

std::vector<MemoryKind> host_pools() {
  Pools& p = pools();
  std::lock_guard<std::mutex> lock(p.mu);
  std::vector<MemoryKind> v;
  for (std::size_t i = 0; i < p.names.size(); ++i) v.push_back(MemoryKind(kFirstPool + int(i)));
  return v;
}

bool is_host_pool(MemoryKind k) {
  Pools& p = pools();
  std::lock_guard<std::mutex> lock(p.mu);
  return int(k) >= kFirstPool && int(k) < kFirstPool + int(p.names.size());
}

int host_pool_numa_node(MemoryKind k) {
  Pools& p = pools();
  std::lock_guard<std::mutex> lock(p.mu);
  const int i = int(k) - kFirstPool;
  return i >= 0 && i < int(p.nodes.size()) ? p.nodes[std::size_t(i)] : -1;
}

std::string memory_kind_name(MemoryKind k) {
  switch (k) {
    case MemoryKind::device:
      return "device";
    case MemoryKind::pinned_host:
      return "pinned host";
    case MemoryKind::pageable_host:
      return "pageable host";
  }
  Pools& p = pools();
  std::lock_guard<std::mutex> lock(p.mu);
  const int i = int(k) - kFirstPool;
  if (i >= 0 && i < int(p.names.size())) return p.names[std::size_t(i)];
  return "memory kind " + std::to_string(int(k));
}

}  // namespace tz
