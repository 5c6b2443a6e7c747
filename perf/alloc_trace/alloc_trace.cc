// libtz_alloc_trace.so: an LD_PRELOAD allocation hook that says what a process allocates and from where
// (issue 33: what a rank allocates outside its memory plan, by call site). It interposes malloc, calloc,
// realloc, free, posix_memalign, aligned_alloc, memalign, mmap and munmap; each allocation of at least
// TZ_ALLOC_TRACE_MIN bytes (default 256 KiB) is recorded with its call stack (12 return addresses), and
// each stack's live bytes, their peak and what they were when all tracked allocations together peaked
// (at_peak: what the process held at its peak, by call site) are kept. At exit the process writes TZ_ALLOC_TRACE (with %p
// replaced by its pid and %r by its MPI rank): one line per call stack, by peak live bytes, each frame
// as module+offset (perf/scripts/alloc_sites.py names them with addr2line and sorts them into the plan's
// allocators and the rest). Smaller allocations are counted in total only.
// Nothing here allocates through the hooks it defines: the tables are static, and a thread inside a hook
// (backtrace's own first-use allocation, say) passes straight through.
#include <dlfcn.h>
#include <execinfo.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void __libc_free(void*);
void* __libc_memalign(size_t, size_t);
void* __mmap(void*, size_t, int, int, int, off_t);
int __munmap(void*, size_t);
}

namespace {

constexpr int kFrames = 12;
constexpr std::size_t kSites = 2048, kLive = std::size_t(1) << 16;

struct Site {
  std::uint64_t hash;
  void* frames[kFrames];
  int depth;
  bool mapped;  // mmap, not malloc
  std::uint64_t live, peak, count, total;
  std::uint64_t at_peak;  // its live bytes when the tracked allocations of every site together peaked
};
struct Live {
  void* ptr;  // nullptr: empty; kTomb: removed
  std::size_t bytes;
  std::uint32_t site;
};

Site g_sites[kSites];
std::uint32_t g_used[kSites];  // the sites in use, in order of first use
std::size_t g_n_used = 0;
Live g_live[kLive];
std::atomic_flag g_lock = ATOMIC_FLAG_INIT;
std::uint64_t g_small_bytes = 0, g_small_count = 0, g_dropped = 0, g_tracked_live = 0, g_tracked_peak = 0;
std::size_t g_min = 256 * 1024;
void* const kTomb = reinterpret_cast<void*>(1);
__attribute__((tls_model("initial-exec"))) thread_local bool t_inside = false;

struct Lock {
  Lock() { while (g_lock.test_and_set(std::memory_order_acquire)) {} }
  ~Lock() { g_lock.clear(std::memory_order_release); }
};

std::size_t slot_of(void* p) { return (reinterpret_cast<std::uintptr_t>(p) >> 4) * 0x9E3779B97F4A7C15ull >> 48; }

void record(void* p, std::size_t bytes, bool mapped) {
  if (!p || t_inside) return;
  if (bytes < g_min) {
    __atomic_add_fetch(&g_small_bytes, bytes, __ATOMIC_RELAXED);
    __atomic_add_fetch(&g_small_count, 1, __ATOMIC_RELAXED);
    return;
  }
  t_inside = true;
  void* frames[kFrames + 2];
  const int n = backtrace(frames, kFrames + 2) - 2;  // without this function and the hook
  std::uint64_t h = mapped ? 0x51ull : 0x17ull;
  for (int i = 0; i < n; ++i) h = (h ^ reinterpret_cast<std::uintptr_t>(frames[i + 2])) * 0x100000001B3ull;
  {
    Lock lock;
    std::size_t s = h % kSites;
    for (std::size_t k = 0; k < kSites && g_sites[s].count && g_sites[s].hash != h; ++k) s = (s + 1) % kSites;
    if (g_sites[s].count && g_sites[s].hash != h) {
      ++g_dropped;  // the site table is full
    } else {
      Site& site = g_sites[s];
      if (!site.count) {
        site.hash = h, site.depth = n > 0 ? n : 0, site.mapped = mapped;
        for (int i = 0; i < site.depth; ++i) site.frames[i] = frames[i + 2];
        g_used[g_n_used++] = std::uint32_t(s);
      }
      ++site.count, site.total += bytes, site.live += bytes;
      if (site.live > site.peak) site.peak = site.live;
      g_tracked_live += bytes;
      if (g_tracked_live > g_tracked_peak) {  // a new peak of everything tracked: what each site holds in it
        g_tracked_peak = g_tracked_live;
        for (std::size_t k = 0; k < g_n_used; ++k) g_sites[g_used[k]].at_peak = g_sites[g_used[k]].live;
      }
      std::size_t i = slot_of(p);
      for (std::size_t k = 0; k < kLive && g_live[i].ptr && g_live[i].ptr != kTomb; ++k) i = (i + 1) % kLive;
      if (!g_live[i].ptr || g_live[i].ptr == kTomb)
        g_live[i] = Live{p, bytes, std::uint32_t(s)};
      else
        ++g_dropped;
    }
  }
  t_inside = false;
}

void forget(void* p) {
  if (!p) return;
  Lock lock;
  std::size_t i = slot_of(p);
  for (std::size_t k = 0; k < kLive && g_live[i].ptr; ++k, i = (i + 1) % kLive)
    if (g_live[i].ptr == p) {
      g_sites[g_live[i].site].live -= g_live[i].bytes;
      g_tracked_live -= g_live[i].bytes;
      g_live[i].ptr = kTomb;
      return;
    }
}

__attribute__((constructor)) void start() {
  if (const char* m = std::getenv("TZ_ALLOC_TRACE_MIN")) g_min = std::strtoull(m, nullptr, 10);
}

__attribute__((destructor)) void finish() {
  const char* pattern = std::getenv("TZ_ALLOC_TRACE");
  if (!pattern || !*pattern) return;
  t_inside = true;
  char path[4096];
  std::size_t o = 0;
  for (const char* c = pattern; *c && o + 24 < sizeof path; ++c) {
    if (c[0] == '%' && (c[1] == 'p' || c[1] == 'r')) {
      const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
      if (!rank) rank = std::getenv("SLURM_PROCID");
      o += c[1] == 'p' ? std::snprintf(path + o, sizeof path - o, "%d", int(getpid()))
                       : std::snprintf(path + o, sizeof path - o, "%s", rank ? rank : "0");
      ++c;
    } else {
      path[o++] = *c;
    }
  }
  path[o] = 0;
  FILE* f = std::fopen(path, "w");
  if (!f) return;
  char exe[4096] = "";
  const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);  // dladdr names the program ""
  exe[len > 0 ? len : 0] = 0;
  std::fprintf(f, "# tz_alloc_trace pid %d min %zu tracked_peak %llu small_bytes %llu small_count %llu dropped %llu\n",
               int(getpid()), g_min, (unsigned long long)g_tracked_peak, (unsigned long long)g_small_bytes,
               (unsigned long long)g_small_count, (unsigned long long)g_dropped);
  for (const Site& s : g_sites) {
    if (!s.count) continue;
    std::fprintf(f, "site %s peak %llu total %llu count %llu live %llu at_peak %llu |", s.mapped ? "mmap" : "malloc",
                 (unsigned long long)s.peak, (unsigned long long)s.total, (unsigned long long)s.count,
                 (unsigned long long)s.live, (unsigned long long)s.at_peak);
    for (int i = 0; i < s.depth; ++i) {
      Dl_info info{};
      if (dladdr(s.frames[i], &info) && info.dli_fname)
        std::fprintf(f, " %s+0x%lx", *info.dli_fname ? info.dli_fname : exe,
                     (unsigned long)(reinterpret_cast<std::uintptr_t>(s.frames[i]) -
                                     reinterpret_cast<std::uintptr_t>(info.dli_fbase) - 1));  // the call, not the return
      else
        std::fprintf(f, " ?+%p", s.frames[i]);
    }
    std::fputc('\n', f);
  }
  std::fclose(f);
}

}  // namespace

extern "C" {

void* malloc(size_t n) {
  void* p = __libc_malloc(n);
  record(p, n, false);
  return p;
}
void* calloc(size_t a, size_t b) {
  void* p = __libc_calloc(a, b);
  record(p, a * b, false);
  return p;
}
void* realloc(void* old, size_t n) {
  forget(old);
  void* p = __libc_realloc(old, n);
  record(p, n, false);
  return p;
}
void free(void* p) {
  forget(p);
  __libc_free(p);
}
int posix_memalign(void** out, size_t align, size_t n) {
  void* p = __libc_memalign(align, n);
  if (!p) return ENOMEM;
  record(p, n, false);
  *out = p;
  return 0;
}
void* aligned_alloc(size_t align, size_t n) {
  void* p = __libc_memalign(align, n);
  record(p, n, false);
  return p;
}
void* memalign(size_t align, size_t n) {
  void* p = __libc_memalign(align, n);
  record(p, n, false);
  return p;
}
void* mmap(void* addr, size_t n, int prot, int flags, int fd, off_t off) {
  void* p = __mmap(addr, n, prot, flags, fd, off);
  if (p != MAP_FAILED && prot != PROT_NONE) record(p, n, true);
  return p;
}
int munmap(void* p, size_t n) {
  forget(p);
  return __munmap(p, n);
}

}  // extern "C"
