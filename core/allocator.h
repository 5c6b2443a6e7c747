// Memory kinds and their allocators. A device offers three kinds, each an allocator under a budget of
// its own: device memory (--device-mem), pinned host memory (the host tier, --host-mem: page-aligned
// and locked, the only host memory a device copies to and from asynchronously) and pageable host
// memory; then one pinned host pool per kind registered with register_host_pool (a memory tier of its
// own, under its own budget). On the CPU backend "device memory" is host memory under its budget.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/memory_budget.h"

namespace tz {

// The three every device has; registered host pools follow (3, 4, ...).
enum class MemoryKind : int { device = 0, pinned_host = 1, pageable_host = 2 };
inline constexpr int kMaxMemoryKinds = 8;

// Registers a pool of pinned host memory under `name` (unique; what its budget errors and the plan call
// it) and returns its kind. Devices made afterwards have an allocator for it, under the budget their
// options give it (DeviceOptions::pool_mem; unlimited otherwise). With numa_node >= 0 its memory is bound
// to that NUMA node (core/numa.h). Throws past kMaxMemoryKinds.
MemoryKind register_host_pool(const std::string& name, int numa_node = -1);
// The NUMA node a pool's memory is bound to; -1 for an unbound pool and the built-in kinds.
int host_pool_numa_node(MemoryKind k);
// The registered pools, in registration order.
std::vector<MemoryKind> host_pools();
bool is_host_pool(MemoryKind k);

// "device", "pinned host", "pageable host", or the pool's name.
std::string memory_kind_name(MemoryKind k);

// Bytes from an allocator: the pointer and the budget reservation that pays for it.
struct Allocation {
  void* ptr = nullptr;
  Reservation reservation;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  MemoryKind kind() const { return kind_; }
  MemoryBudget& budget() { return budget_; }
  const MemoryBudget& budget() const { return budget_; }

  // `what` names the buffer in the budget error. bytes > 0.
  virtual Allocation allocate(std::size_t bytes, const std::string& what) = 0;
  // Frees memory from allocate(); the reservation is returned separately (by its destructor).
  virtual void deallocate(void* p, std::size_t bytes) noexcept = 0;
  // The live blocks of an allocator whose memory is bound to a NUMA node (host_pool_numa_node), for
  // checking where their pages are (core/numa.h page_nodes); empty for every other allocator.
  virtual std::vector<std::pair<const void*, std::size_t>> node_blocks() const { return {}; }

 protected:
  Allocator(MemoryKind kind, std::string tier, std::size_t budget)
      : kind_(kind), budget_(std::move(tier), budget) {}

 private:
  MemoryKind kind_;
  MemoryBudget budget_;
};

}  // namespace tz
