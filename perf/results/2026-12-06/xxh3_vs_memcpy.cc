// Scratch micro-benchmark for issue 36: XXH3-64 and memcpy over a cached 1 MiB block and streaming 256 MiB.
// g++ -O2 -march=x86-64 -o xxh3_vs_memcpy xxh3_vs_memcpy.cc -lxxhash
#include <xxhash.h>
#include <xxh_x86dispatch.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
int main() {
  size_t big = size_t(256) << 20, blk = size_t(1) << 20;
  std::vector<unsigned char> b(big);
  for (size_t i = 0; i < big; ++i) b[i] = (unsigned char)(i * 2654435761u >> 13);
  auto t = [&](const char* name, auto fn, size_t span) {
    volatile unsigned long long s = 0;
    for (int w = 0; w < 2; ++w) {
      auto t0 = std::chrono::steady_clock::now();
      size_t done = 0;
      while (done < (size_t(4) << 30)) { for (size_t o = 0; o < span; o += blk) s += fn(b.data() + o, blk); done += span; }
      double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (w) std::printf("%-10s span %4zu MiB: %.1f GB/s\n", name, span >> 20, done / sec / 1e9);
    }
  };
  t("dispatch", [](const void* p, size_t n) { return XXH3_64bits_dispatch(p, n); }, blk);
  t("dispatch", [](const void* p, size_t n) { return XXH3_64bits_dispatch(p, n); }, big);
  t("baseline", [](const void* p, size_t n) { return XXH3_64bits(p, n); }, blk);
  t("baseline", [](const void* p, size_t n) { return XXH3_64bits(p, n); }, big);
  auto tm = [&](size_t span) { std::vector<unsigned char> d(span); auto t0 = std::chrono::steady_clock::now(); size_t done=0; while (done < (size_t(4)<<30)) { for (size_t o=0;o<span;o+=blk) std::memcpy(d.data()+o, b.data()+o, blk); done+=span;} double sec=std::chrono::duration<double>(std::chrono::steady_clock::now()-t0).count(); std::printf("memcpy     span %4zu MiB: %.1f GB/s\n", span>>20, done/sec/1e9); };
  tm(blk); tm(big);
}
