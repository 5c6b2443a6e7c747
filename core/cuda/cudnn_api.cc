// cuDNN loaded at run time (see cudnn_api.h): dlopen, each entry point resolved by name, once per library
// name for the process.
#include "core/cuda/cudnn_api.h"

#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>
#include <type_traits>

#ifndef TZ_CUDNN_DIR
#define TZ_CUDNN_DIR ""
#endif

// The backend graph API as these headers declare it is what cudnn_graph.cc and cudnn_sdpa_graph.cc build
// with; cuDNN 9 keeps it stable within the major version (what libcudnn.so.9 promises).
static_assert(CUDNN_MAJOR == 9, "tierzero's cuDNN attention is written against cuDNN 9's backend graph API");

namespace tz::cuda {
namespace {

void* open_library(const std::string& name, std::string& why) {
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib) return lib;
  why = dlerror();
  const std::string dir = TZ_CUDNN_DIR;
  if (dir.empty() || name.find('/') != std::string::npos) return nullptr;
  lib = dlopen((dir + "/" + name).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) why += "; " + std::string(dlerror());
  return lib;
}

std::unique_ptr<CudnnApi> load(const std::string& name) {
  std::string why;
  void* lib = open_library(name, why);
  if (!lib)
    TZ_FAIL("cannot load cuDNN (", name, "): ", why,
            "; put cuDNN 9's library folder (libcudnn.so.9 and its libcudnn_*.so.9 beside it, e.g. PyTorch's "
            "site-packages/nvidia/cudnn/lib) on LD_LIBRARY_PATH, or use --attention-math bf16");
  auto api = std::make_unique<CudnnApi>();
  api->library = name;
  auto sym = [&](auto& fn, const char* symbol) {
    void* p = dlsym(lib, symbol);
    if (!p) TZ_FAIL("cuDNN (", name, ") has no ", symbol, ": ", dlerror(), " (cuDNN 9.0 or newer is needed)");
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  sym(api->get_version, "cudnnGetVersion");
  sym(api->get_cudart_version, "cudnnGetCudartVersion");
  sym(api->error_string, "cudnnGetErrorString");
  sym(api->last_error, "cudnnGetLastErrorString");
  sym(api->create, "cudnnCreate");
  sym(api->destroy, "cudnnDestroy");
  sym(api->set_stream, "cudnnSetStream");
  sym(api->create_descriptor, "cudnnBackendCreateDescriptor");
  sym(api->destroy_descriptor, "cudnnBackendDestroyDescriptor");
  sym(api->set_attribute, "cudnnBackendSetAttribute");
  sym(api->get_attribute, "cudnnBackendGetAttribute");
  sym(api->finalize, "cudnnBackendFinalize");
  sym(api->execute, "cudnnBackendExecute");
  const std::size_t v = api->get_version();
  TZ_CHECK(v >= 90000 && v < 100000, "cuDNN (", name, ") reports version ", cudnn_version_text(v),
           ": tierzero's cuDNN attention needs cuDNN 9");
  return api;  // the library stays loaded for the process
}

}  // namespace

std::string CudnnApi::describe(cudnnStatus_t rc) const {
  std::string text = error_string(rc);
  char last[1024] = {0};
  last_error(last, sizeof last - 1);
  if (last[0]) text += std::string(" (cuDNN: ") + last + ")";
  return text;
}

std::string CudnnApi::nvrtc_problem() const {
  const std::size_t cudart = get_cudart_version();  // e.g. 13010 for CUDA 13.1
  const std::string name = "libnvrtc.so." + std::to_string(cudart / 1000);
  if (void* h = dlopen(name.c_str(), RTLD_LAZY | RTLD_LOCAL)) {
    dlclose(h);
    return "";
  }
  const char* why = dlerror();
  return "cuDNN " + cudnn_version_text(version()) + " (built for CUDA " + std::to_string(cudart / 1000) +
         "." + std::to_string(cudart % 1000 / 10) + ") compiles its attention with NVRTC, and " + name +
         " cannot be loaded (" + (why ? why : "dlopen failed") +
         "): put the folder holding it (the CUDA toolkit's lib64, or site-packages' nvidia/cuda_nvrtc/lib or "
         "nvidia/cu13/lib) on LD_LIBRARY_PATH";
}

const CudnnApi& cudnn(const std::string& library) {
  // A failed load is not kept: the next call tries (and fails) again; the attention remembers it instead.
  static std::mutex mu;
  // Never destroyed: handles held by static objects may be released after static destruction began.
  static auto* loaded = new std::map<std::string, std::unique_ptr<CudnnApi>>;
  const std::string name = library.empty() ? kCudnnSoname : library;
  std::lock_guard lock(mu);
  auto it = loaded->find(name);
  if (it == loaded->end()) it = loaded->emplace(name, load(name)).first;
  return *it->second;
}

std::string cudnn_version_text(std::size_t v) {
  return std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." + std::to_string(v % 100);
}

}  // namespace tz::cuda
