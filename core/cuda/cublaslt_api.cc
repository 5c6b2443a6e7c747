#include "core/cuda/cublaslt_api.h"

#include <dlfcn.h>

#include <mutex>
#include <string>
#include <type_traits>

#include "core/error.h"

#ifndef TZ_CUBLASLT_SONAME
#error "TZ_CUBLASLT_SONAME (libcublasLt.so.<major>) is set by core/cuda/CMakeLists.txt"
#endif
#ifndef TZ_CUBLASLT_DIR
#define TZ_CUBLASLT_DIR ""
#endif

namespace tz::cuda {
namespace {

CublasLtApi load() {
  const std::string soname = TZ_CUBLASLT_SONAME, dir = TZ_CUBLASLT_DIR;
  void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string why = lib ? "" : std::string(dlerror());
  if (!lib && !dir.empty()) {
    lib = dlopen((dir + "/" + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) why += "; " + std::string(dlerror());
  }
  if (!lib)
    TZ_FAIL("cannot load cuBLASLt (", soname, "): ", why,
            "; put the CUDA toolkit's library folder on LD_LIBRARY_PATH, or use --device cpu");
  CublasLtApi api{};
  auto sym = [&](auto& fn, const char* name) {
    void* p = dlsym(lib, name);
    if (!p) TZ_FAIL("cuBLASLt (", soname, ") has no ", name, ": ", dlerror());
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  sym(api.create, "cublasLtCreate");
  sym(api.destroy, "cublasLtDestroy");
  sym(api.status_name, "cublasLtGetStatusName");
  sym(api.status_string, "cublasLtGetStatusString");
  sym(api.matmul, "cublasLtMatmul");
  sym(api.desc_create, "cublasLtMatmulDescCreate");
  sym(api.desc_destroy, "cublasLtMatmulDescDestroy");
  sym(api.desc_set, "cublasLtMatmulDescSetAttribute");
  sym(api.layout_create, "cublasLtMatrixLayoutCreate");
  sym(api.layout_destroy, "cublasLtMatrixLayoutDestroy");
  sym(api.pref_create, "cublasLtMatmulPreferenceCreate");
  sym(api.pref_destroy, "cublasLtMatmulPreferenceDestroy");
  sym(api.pref_set, "cublasLtMatmulPreferenceSetAttribute");
  sym(api.heuristic, "cublasLtMatmulAlgoGetHeuristic");
  return api;  // the library stays loaded for the process
}

}  // namespace

const CublasLtApi& cublaslt() {
  // A failed load throws out of call_once, which then runs again at the next call (and fails the same).
  static CublasLtApi api;
  static std::once_flag once;
  std::call_once(once, [] { api = load(); });
  return api;
}

}  // namespace tz::cuda
