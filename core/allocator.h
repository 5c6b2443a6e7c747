// Memory kinds and their allocators. A device offers three kinds, each an allocator under a budget of
// its own: device memory (--device-mem), pinned host memory (the host tier, --host-mem: page-aligned
// and locked, the only host memory a device copies to and from asynchronously) and pageable host
// memory. On the CPU backend "device memory" is host memory under its budget.
#pragma once

#include <cstddef>
#include <string>

#include "core/memory_budget.h"

namespace tz {

enum class MemoryKind { device, pinned_host, pageable_host };
inline constexpr int kNumMemoryKinds = 3;

// "device", "pinned host", "pageable host".
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

 protected:
  Allocator(MemoryKind kind, std::string tier, std::size_t budget)
      : kind_(kind), budget_(std::move(tier), budget) {}

 private:
  MemoryKind kind_;
  MemoryBudget budget_;
};

}  // namespace tz
