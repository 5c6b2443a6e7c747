// Memory tiers as data: where a state class lives at rest. Three are built in (device, host, nvme); a tier
// registered with register_tier (a test's second host tier today, NUMA nodes next) is one more entry,
// with its own name, budget and allocator. Everyone else asks a tier what it is (its medium and memory
// kind) and sizes per-tier arrays with PerTier; no one indexes tiers by number outside this file.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "core/allocator.h"

namespace tz {

// The built-in tiers; registered ones take the next ids.
enum class Tier : int { device = 0, host = 1, nvme = 2 };
inline constexpr int kMaxTiers = 8;

// How a state on a tier is reached: in device memory (the device's kernels update it), in host memory
// (the CPU reaches it in place; copies to and from a GPU go through it directly), or in a file store
// (staged through pinned host buffers by the swappers). One device tier and one file tier exist; host
// tiers may be many.
enum class TierMedium { device, host, file };

struct TierTraits {
  std::string name;                        // "host": the plan's tier column and budget errors
  std::vector<std::string> offload_names;  // what --offload-* and DeepSpeed's "device" accept: "cpu"
  TierMedium medium = TierMedium::host;
  MemoryKind memory = MemoryKind::pinned_host;  // the allocator its buffers come from (not for a file tier)
  std::string budget_flag;                      // "--host-mem": named when the plan does not fit
  int numa_node = -1;  // a numa:N tier's node (its pool is bound to it: zero/numa_tier.h); -1 for the others
};

// Registers a host tier (medium host: device and file tiers are built in) under names no other tier
// has; returns its id. Throws past kMaxTiers.
Tier register_tier(TierTraits traits);
const TierTraits& tier_traits(Tier t);
// Every registered tier in id order: device, host, nvme, then the registered ones.
std::vector<Tier> tiers();
std::string tier_name(Tier t);
// A tier by any of its offload names ("none", "cpu", "nvme", ...); `what` names the flag or key.
Tier parse_offload_device(const std::string& s, const std::string& what);

inline bool on_device(Tier t) { return tier_traits(t).medium == TierMedium::device; }
inline bool in_host_memory(Tier t) { return tier_traits(t).medium == TierMedium::host; }
inline bool in_file(Tier t) { return tier_traits(t).medium == TierMedium::file; }

// The one tier-to-memory mapping: the memory kind a tier's buffers are allocated from (device and host
// tiers), and the tier a memory kind's buffers count against (pageable host memory: the host tier).
MemoryKind tier_memory(Tier t);
Tier memory_tier(MemoryKind k);

// One value per tier, indexed by the tier (sized by the most tiers there can be).
template <typename T>
class PerTier {
 public:
  PerTier() : v_{} {}
  explicit PerTier(const T& fill) { v_.fill(fill); }
  T& operator[](Tier t) { return v_.at(std::size_t(t)); }
  const T& operator[](Tier t) const { return v_.at(std::size_t(t)); }
  bool operator==(const PerTier&) const = default;

 private:
  std::array<T, kMaxTiers> v_;
};

}  // namespace tz
