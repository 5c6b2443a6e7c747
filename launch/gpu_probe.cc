// probe_gpus: the CUDA driver API, the runtime, cuBLAS, NCCL and cuDNN through dlopen, declared here by
// their C signatures (no CUDA headers: this file builds everywhere).
#include "launch/gpu_probe.h"

#include <dlfcn.h>

#include <cstdio>
#include <string>

namespace tz {
namespace {

// Tries the loader's search path, then the toolkit's usual folders. `why`, when given, gets the loader's
// reason for the first name on its search path.
void* open_lib(const std::vector<std::string>& names, std::string* where, std::string* why = nullptr) {
  const char* dirs[] = {"", "/usr/local/cuda/lib64/", "/usr/local/cuda/lib/",
                        "/usr/local/cuda/targets/x86_64-linux/lib/", "/usr/lib/x86_64-linux-gnu/"};
  for (const char* d : dirs)
    for (const auto& n : names) {
      const std::string path = std::string(d) + n;
      if (void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        *where = path;
        return h;
      }
      const char* e = ::dlerror();
      if (why && why->empty() && e) *why = e;
    }
  return nullptr;
}

template <typename F>
F sym(void* lib, const char* name) {
  return lib ? reinterpret_cast<F>(::dlsym(lib, name)) : nullptr;
}

std::string version_text(int v, int major_div, int minor_div) {
  return std::to_string(v / major_div) + "." + std::to_string(v % major_div / minor_div);
}

void probe_driver(GpuReport& r) {
  std::string where;
  void* cu = open_lib({"libcuda.so.1"}, &where);
  if (!cu) {
    r.driver_problem = "no NVIDIA driver (libcuda.so.1 not found)";
    return;
  }
  using Init = int (*)(unsigned);
  using IntOut = int (*)(int*);
  using DeviceGet = int (*)(int*, int);
  using Name = int (*)(char*, int, int);
  using Mem = int (*)(std::size_t*, int);
  using Attr = int (*)(int*, int, int);
  using Peer = int (*)(int*, int, int);
  using ErrStr = int (*)(int, const char**);
  auto init = sym<Init>(cu, "cuInit");
  auto version = sym<IntOut>(cu, "cuDriverGetVersion");
  auto count = sym<IntOut>(cu, "cuDeviceGetCount");
  auto get = sym<DeviceGet>(cu, "cuDeviceGet");
  auto name = sym<Name>(cu, "cuDeviceGetName");
  auto mem = sym<Mem>(cu, "cuDeviceTotalMem_v2");
  auto attr = sym<Attr>(cu, "cuDeviceGetAttribute");
  auto peer = sym<Peer>(cu, "cuDeviceCanAccessPeer");
  auto err = sym<ErrStr>(cu, "cuGetErrorString");
  if (!init || !version || !count || !get) {
    r.driver_problem = where + " lacks the driver API";
    return;
  }
  int v = 0;
  if (version(&v) == 0) r.driver = version_text(v, 1000, 10);
  if (int rc = init(0); rc != 0) {
    const char* text = nullptr;
    if (err) err(rc, &text);
    r.driver_problem = "cuInit failed: " + std::string(text ? text : "error " + std::to_string(rc));
    return;
  }
  int n = 0;
  count(&n);
  for (int i = 0; i < n; ++i) {
    int dev = 0;
    get(&dev, i);
    GpuInfo g;
    char buf[256] = {0};
    if (name) name(buf, sizeof buf - 1, dev);
    g.name = buf;
    std::size_t bytes = 0;
    if (mem && mem(&bytes, dev) == 0) g.memory_bytes = bytes;
    if (attr) attr(&g.cc_major, 75, dev), attr(&g.cc_minor, 76, dev);  // COMPUTE_CAPABILITY_MAJOR/MINOR
    int domain = 0, bus = 0, slot = 0;  // PCI_DOMAIN_ID, PCI_BUS_ID, PCI_DEVICE_ID
    if (attr && attr(&domain, 50, dev) == 0 && attr(&bus, 33, dev) == 0 && attr(&slot, 34, dev) == 0) {
      char id[32];
      std::snprintf(id, sizeof id, "%04x:%02x:%02x.0", unsigned(domain), unsigned(bus), unsigned(slot));
      g.pci_bus_id = id;
    }
    r.gpus.push_back(g);
  }
  r.peer.assign(std::size_t(n), std::vector<bool>(std::size_t(n), false));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      int can = i == j;
      if (i != j && peer) peer(&can, i, j);
      r.peer[std::size_t(i)][std::size_t(j)] = can != 0;
    }
}

// cuDNN 9, as the attention loads it (core/cuda/cudnn_api.h): cudnnGetVersion answers without a GPU.
void probe_cudnn(GpuReport& r) {
  std::string why;
  void* h = open_lib({"libcudnn.so.9"}, &r.cudnn_lib, &why);
  if (!h) {
    r.cudnn_problem = "libcudnn.so.9 not found (" + why + "): the attention runs its own kernels";
    return;
  }
  auto version = sym<std::size_t (*)()>(h, "cudnnGetVersion");
  auto cudart = sym<std::size_t (*)()>(h, "cudnnGetCudartVersion");
  if (!version) {
    r.cudnn_problem = r.cudnn_lib + " has no cudnnGetVersion";
    return;
  }
  const std::size_t v = version();  // major * 10000 + minor * 100 + patch
  r.cudnn = std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." + std::to_string(v % 100);
  if (!cudart) return;
  const int built_for = int(cudart());  // e.g. 13010
  r.cudnn += " (built for CUDA " + version_text(built_for, 1000, 10) + ")";
  // cuDNN compiles its fused attention at run time with this NVRTC; without it no engine builds the graphs.
  const std::string nvrtc = "libnvrtc.so." + std::to_string(built_for / 1000);
  std::string nvrtc_why;
  if (!open_lib({nvrtc}, &r.cudnn_nvrtc_lib, &nvrtc_why))
    r.cudnn_problem = nvrtc + " not found (" + nvrtc_why + "): cuDNN cannot compile its attention";
}

}  // namespace

GpuReport probe_gpus() {
  GpuReport r;
  probe_driver(r);
  if (void* rt = open_lib({"libcudart.so", "libcudart.so.13", "libcudart.so.12"}, &r.runtime_lib)) {
    int v = 0;
    if (auto f = sym<int (*)(int*)>(rt, "cudaRuntimeGetVersion"); f && f(&v) == 0) r.runtime = version_text(v, 1000, 10);
  }
  if (void* bl = open_lib({"libcublas.so", "libcublas.so.13", "libcublas.so.12"}, &r.cublas_lib)) {
    if (auto f = sym<int (*)(int, int*)>(bl, "cublasGetProperty")) {
      int a = 0, b = 0, c = 0;  // MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
      if (f(0, &a) == 0 && f(1, &b) == 0 && f(2, &c) == 0)
        r.cublas = std::to_string(a) + "." + std::to_string(b) + "." + std::to_string(c);
    }
  }
  if (void* nc = open_lib({"libnccl.so.2", "libnccl.so"}, &r.nccl_lib)) {
    int v = 0;  // major * 10000 + minor * 100 + patch since NCCL 2.9
    if (auto f = sym<int (*)(int*)>(nc, "ncclGetVersion"); f && f(&v) == 0)
      r.nccl = std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." + std::to_string(v % 100);
  }
  probe_cudnn(r);
  return r;
}

}  // namespace tz
