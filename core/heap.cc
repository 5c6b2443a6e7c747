// Which allocator serves malloc, found where the dynamic linker resolved it, and its way of giving back
// free memory (tcmalloc's looked up at run time, so that core links no allocator of its own).
#include "core/heap.h"

#include <dlfcn.h>
#include <malloc.h>

#include <cstdlib>

namespace tz {
namespace {

// The file that defines the malloc this process calls.
std::string malloc_home() {
  void* f = ::dlsym(RTLD_DEFAULT, "malloc");
  Dl_info info{};
  if (!f || !::dladdr(f, &info) || !info.dli_fname) return "";
  const std::string path = info.dli_fname;
  return path.substr(path.rfind('/') + 1);
}

}  // namespace

std::string heap_allocator() {
  const std::string home = malloc_home();
  if (home.find("tcmalloc") != std::string::npos) return "tcmalloc";
  if (home.rfind("libc.so", 0) == 0) return "glibc";
  return home.empty() ? "unknown" : home;
}

void release_free_heap() {
  ::malloc_trim(0);  // glibc's heap (under tcmalloc a no-op: glibc's malloc holds nothing)
  using Release = void (*)();
  if (auto release = reinterpret_cast<Release>(::dlsym(RTLD_DEFAULT, "MallocExtension_ReleaseFreeMemory")))
    release();
}

}  // namespace tz
