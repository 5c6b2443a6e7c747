// core/heap.h: the allocator serving malloc is named, and release_free_heap gives back what the heap holds
// free. Built twice: core_heap_test under glibc's malloc, core_heap_tcmalloc_test linked with tcmalloc as the
// tierzero binary is (TZ_TEST_HEAP names the one linked).
#include "core/heap.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/resident_memory.h"

#ifndef TZ_TEST_HEAP
#define TZ_TEST_HEAP "glibc"
#endif

namespace tz {
namespace {

constexpr std::size_t kMiB = std::size_t(1) << 20;

#ifdef TZ_POISON_DEVICE_MEMORY
#define TZ_SKIP_UNDER_ASAN() GTEST_SKIP() << "the poisoned build's heap is AddressSanitizer's, not " TZ_TEST_HEAP
#else
#define TZ_SKIP_UNDER_ASAN() (void)0
#endif

TEST(Heap, TheAllocatorServingMallocIsNamed) {
  TZ_SKIP_UNDER_ASAN();
  EXPECT_EQ(heap_allocator(), TZ_TEST_HEAP);
}

// 64 MiB in 64 KiB blocks (under glibc's mmap threshold: from its heap; a small size class of tcmalloc's),
// each written; after each a 64-byte block that stays allocated, so that glibc cannot give back the top
// of its heap on free. Freed, the blocks stay resident; released, at least 48 of the 64 MiB go back.
TEST(Heap, FreedMemoryStaysResidentUntilReleased) {
  TZ_SKIP_UNDER_ASAN();
  constexpr std::size_t kBlock = 64 << 10, kCount = 1024;
  release_free_heap();
  std::vector<char*> blocks, pins;
  blocks.reserve(kCount);
  pins.reserve(kCount);
  const std::size_t before = resident_status_bytes("VmRSS");
  for (std::size_t i = 0; i < kCount; ++i) {
    blocks.push_back(static_cast<char*>(std::malloc(kBlock)));
    ASSERT_NE(blocks.back(), nullptr);
    std::memset(blocks.back(), int(i), kBlock);
    pins.push_back(static_cast<char*>(std::malloc(64)));
  }
  const std::size_t held = resident_status_bytes("VmRSS");
  ASSERT_GE(held, before + 60 * kMiB) << "the blocks were not made resident";
  for (char* p : blocks) std::free(p);
  const std::size_t freed = resident_status_bytes("VmRSS");
  release_free_heap();
  const std::size_t released = resident_status_bytes("VmRSS");
  for (char* p : pins) std::free(p);
  EXPECT_GE(freed + 16 * kMiB, held) << "freed, the heap kept less than 48 MiB resident: nothing left to release";
  EXPECT_LE(released + 48 * kMiB, freed) << "release_free_heap gave back " << (freed - std::min(freed, released)) / kMiB
                                         << " MiB of the 64 freed";
}

}  // namespace
}  // namespace tz
