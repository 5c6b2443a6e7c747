// The process's heap: which allocator serves malloc, and giving back what it holds free. The tierzero
// binary links gperftools' tcmalloc (docs/ARCHITECTURE.md#the-stack): glibc's malloc kept 8 to 25 MiB of
// freed packing buffers resident depending on the model's shapes, which no plan line could predict.
#pragma once

#include <string>

namespace tz {

// "tcmalloc" where gperftools' tcmalloc serves malloc in this process, "glibc" where the C library does,
// else the file name of whatever does (a sanitizer's runtime, the executable itself).
std::string heap_allocator();

// Returns the heap's free memory to the kernel (glibc: malloc_trim; tcmalloc: ReleaseFreeMemory), so that
// the resident set holds what is allocated: after a run's set-up, before the steps a plan holds.
void release_free_heap();

}  // namespace tz
