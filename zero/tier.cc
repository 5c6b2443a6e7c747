// The registry of memory tiers and the three built in.
#include "zero/tier.h"

#include <memory>
#include <mutex>

#include "core/error.h"
#include "zero/numa_tier.h"

namespace tz {
namespace {

struct Registry {
  std::mutex mu;
  std::vector<std::unique_ptr<TierTraits>> tiers;  // tier i; nodes are stable: traits are returned by reference
};

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;  // never destroyed, like the device kinds
    reg->tiers.push_back(std::make_unique<TierTraits>(TierTraits{
        "device", {"none", "device"}, TierMedium::device, MemoryKind::device, "--device-mem", -1}));
    reg->tiers.push_back(std::make_unique<TierTraits>(
        TierTraits{"host", {"cpu", "host"}, TierMedium::host, MemoryKind::pinned_host, "--host-mem", -1}));
    reg->tiers.push_back(std::make_unique<TierTraits>(
        TierTraits{"nvme", {"nvme"}, TierMedium::file, MemoryKind::pinned_host, "--nvme-mem", -1}));
    return reg;
  }();
  return *r;
}

}  // namespace

Tier register_tier(TierTraits t) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  TZ_CHECK(!t.name.empty(), "a memory tier needs a name");
  TZ_CHECK(t.medium == TierMedium::host, "tier '", t.name,
           "': only host-memory tiers can be registered (the device and nvme tiers are built in)");
  TZ_CHECK(t.memory != MemoryKind::device && t.memory != MemoryKind::pageable_host, "tier '", t.name,
           "' must live in pinned host memory or a registered host pool, not ", memory_kind_name(t.memory));
  TZ_CHECK(t.numa_node == host_pool_numa_node(t.memory), "tier '", t.name, "' names NUMA node ", t.numa_node,
           " but its memory, ", memory_kind_name(t.memory), ", is bound to ", host_pool_numa_node(t.memory));
  std::vector<std::string> names = t.offload_names;
  names.push_back(t.name);
  for (const auto& other : r.tiers) {
    TZ_CHECK(other->memory != t.memory || other->medium != TierMedium::host, "tier '", t.name, "' would share ",
             memory_kind_name(t.memory), " memory with tier '", other->name, "': register a host pool for it");
    for (const std::string& n : names) {
      TZ_CHECK(n != other->name, "tier name '", n, "' is taken by tier '", other->name, "'");
      for (const std::string& o : other->offload_names)
        TZ_CHECK(n != o, "offload device name '", n, "' is taken by tier '", other->name, "'");
    }
  }
  TZ_CHECK(int(r.tiers.size()) < kMaxTiers, "at most ", kMaxTiers, " memory tiers; '", t.name, "' is one too many");
  r.tiers.push_back(std::make_unique<TierTraits>(std::move(t)));
  return Tier(int(r.tiers.size()) - 1);
}

const TierTraits& tier_traits(Tier t) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  TZ_CHECK(int(t) >= 0 && int(t) < int(r.tiers.size()), "memory tier ", int(t), " is not registered");
  return *r.tiers[std::size_t(t)];
}

std::vector<Tier> tiers() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<Tier> v;
  for (std::size_t i = 0; i < r.tiers.size(); ++i) v.push_back(Tier(int(i)));
  return v;
}

std::string tier_name(Tier t) { return tier_traits(t).name; }

Tier parse_offload_device(const std::string& s, const std::string& what) {
  if (const int node = parse_numa_name(s, what); node >= 0) return numa_tier(node);
  std::vector<std::string> names;
  for (Tier t : tiers()) {
    const TierTraits& tt = tier_traits(t);
    for (const std::string& n : tt.offload_names)
      if (n == s) return t;
    if (tt.name == s) return t;
    names.push_back(tt.offload_names.empty() ? tt.name : tt.offload_names.front());
  }
  std::string list;
  for (std::size_t i = 0; i < names.size(); ++i)
    list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  TZ_FAIL(what, " '", s, "' is not an offload device: use ", list, ", or numa:N (NUMA node N's memory)");
}

MemoryKind tier_memory(Tier t) {
  const TierTraits& tt = tier_traits(t);
  TZ_CHECK(tt.medium != TierMedium::file, "tier '", tt.name, "' is a file store, not memory");
  return tt.memory;
}

Tier memory_tier(MemoryKind k) {
  if (k == MemoryKind::pageable_host) return Tier::host;
  for (Tier t : tiers()) {
    const TierTraits& tt = tier_traits(t);
    if (tt.medium != TierMedium::file && tt.memory == k) return t;
  }
  TZ_FAIL(memory_kind_name(k), " memory belongs to no tier");
}

}  // namespace tz
