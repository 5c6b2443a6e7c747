// tz-lib-version: the version of each NVIDIA library named on the command line, asked of the library
// itself through dlopen (file names need not carry it: pip's libcublas.so.13 does not). It links only the
// C and C++ runtime, so the GPU bundle's run.sh can use it before it knows whether tierzero will load.
//
//   tz-lib-version PATH...   one line per PATH: "<kind>\t<version>\t<PATH>", or "error\t<why>\t<PATH>"
//                            (exit 1 when any line is an error)
// Kinds: cuda (the driver: cuDriverGetVersion, which needs no GPU), cudart, cublas, cublasLt, nccl, cudnn
// (cudnnGetVersion, which needs no GPU either) and nvrtc (nvrtcVersion: cuDNN compiles its attention with it).
#include <dlfcn.h>

#include <cstdio>
#include <string>

namespace {

std::string dotted(long v, long major_div, long minor_div) {
  return std::to_string(v / major_div) + "." + std::to_string(v % major_div / minor_div) + "." +
         std::to_string(v % minor_div);
}

// Which library `h` is, and its version; false (with `why`) when it offers none of the known calls.
bool version_of(void* h, std::string& kind, std::string& version, std::string& why) {
  using IntOut = int (*)(int*);
  if (auto f = reinterpret_cast<IntOut>(::dlsym(h, "ncclGetVersion"))) {
    int v = 0;
    if (f(&v) != 0) return why = "ncclGetVersion failed", false;
    kind = "nccl";
    version = v >= 10000 ? dotted(v, 10000, 100) : dotted(v, 1000, 100);  // 2.9+: X*10000 + Y*100 + Z
    return true;
  }
  if (auto f = reinterpret_cast<int (*)(int, int*)>(::dlsym(h, "cublasGetProperty"))) {
    int part[3] = {0, 0, 0};  // MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
    for (int i = 0; i < 3; ++i)
      if (f(i, &part[i]) != 0) return why = "cublasGetProperty failed", false;
    kind = "cublas";
    version = std::to_string(part[0]) + "." + std::to_string(part[1]) + "." + std::to_string(part[2]);
    return true;
  }
  if (auto f = reinterpret_cast<std::size_t (*)()>(::dlsym(h, "cublasLtGetVersion"))) {
    const long v = long(f());  // major * 10000 + minor * 100 + patch
    kind = "cublasLt";
    version = dotted(v, 10000, 100);
    return true;
  }
  if (auto f = reinterpret_cast<std::size_t (*)()>(::dlsym(h, "cudnnGetVersion"))) {
    const long v = long(f());  // major * 10000 + minor * 100 + patch (cuDNN 9)
    kind = "cudnn";
    version = dotted(v, 10000, 100);
    return true;
  }
  if (auto f = reinterpret_cast<int (*)(int*, int*)>(::dlsym(h, "nvrtcVersion"))) {
    int major = 0, minor = 0;
    if (f(&major, &minor) != 0) return why = "nvrtcVersion failed", false;
    kind = "nvrtc";
    version = std::to_string(major) + "." + std::to_string(minor);
    return true;
  }
  if (auto f = reinterpret_cast<IntOut>(::dlsym(h, "cudaRuntimeGetVersion"))) {
    int v = 0;
    if (f(&v) != 0) return why = "cudaRuntimeGetVersion failed", false;
    kind = "cudart";
    version = std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
    return true;
  }
  if (auto f = reinterpret_cast<IntOut>(::dlsym(h, "cuDriverGetVersion"))) {
    int v = 0;
    if (f(&v) != 0) return why = "cuDriverGetVersion failed", false;
    kind = "cuda";
    version = std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
    return true;
  }
  why = "not an NVIDIA library this tool knows (no version call found)";
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: tz-lib-version LIBRARY_PATH...\n");
    return 2;
  }
  int status = 0;
  for (int i = 1; i < argc; ++i) {
    std::string kind, version, why;
    void* h = ::dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = ::dlerror();
      why = e ? e : "dlopen failed";
    }
    if (h && version_of(h, kind, version, why)) {
      std::printf("%s\t%s\t%s\n", kind.c_str(), version.c_str(), argv[i]);
    } else {
      for (char& c : why) c = (c == '\t' || c == '\n') ? ' ' : c;
      std::printf("error\t%s\t%s\n", why.c_str(), argv[i]);
      status = 1;
    }
  }
  return status;
}
