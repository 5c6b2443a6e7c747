// The registry of poisoned device allocations: each has an open count; it is unpoisoned while the
// count is above zero. Built only in the TZ_POISON_DEVICE_MEMORY build (empty otherwise).
#include "core/poison.h"

#if defined(TZ_POISON_DEVICE_MEMORY)
#include <sanitizer/asan_interface.h>

#include <cstdint>
#include <map>
#include <mutex>

#include "core/error.h"

namespace tz::poison_detail {
namespace {

struct Region {
  std::size_t bytes;
  int open;
};

struct Registry {
  std::mutex mu;
  std::map<std::uintptr_t, Region> regions;  // by start address
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: buffers may be freed during static destruction
  return *r;
}

// The region containing p, or end().
std::map<std::uintptr_t, Region>::iterator find(Registry& r, const void* p) {
  auto a = reinterpret_cast<std::uintptr_t>(p);
  auto it = r.regions.upper_bound(a);
  if (it == r.regions.begin()) return r.regions.end();
  --it;
  return a < it->first + it->second.bytes ? it : r.regions.end();
}

}  // namespace

void add(void* p, std::size_t bytes) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.regions[reinterpret_cast<std::uintptr_t>(p)] = {bytes, 0};
  __asan_poison_memory_region(p, bytes);
}

void remove(void* p) noexcept {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.regions.find(reinterpret_cast<std::uintptr_t>(p));
  if (it == r.regions.end()) return;
  __asan_unpoison_memory_region(p, it->second.bytes);  // the allocator may touch it again
  r.regions.erase(it);
}

void open(const void* p) noexcept {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = find(r, p);
  if (it == r.regions.end()) return;
  if (it->second.open++ == 0)
    __asan_unpoison_memory_region(reinterpret_cast<void*>(it->first), it->second.bytes);
}

void close(const void* p) noexcept {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = find(r, p);
  if (it == r.regions.end() || it->second.open == 0) return;
  if (--it->second.open == 0)
    __asan_poison_memory_region(reinterpret_cast<void*>(it->first), it->second.bytes);
}

}  // namespace tz::poison_detail
#endif
