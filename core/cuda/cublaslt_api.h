// cuBLASLt's entry points, loaded with dlopen at the first CUDA device instead of linked: the library's
// initialisers take 0.3 s of every process start on our 2-core machines (541 MB of code), which every
// test binary and every `tierzero` run would pay without ever making a cuda device. Include only from
// code in CUDA targets.
#pragma once

#include <cublasLt.h>

namespace tz::cuda {

struct CublasLtApi {
  decltype(&::cublasLtCreate) create;
  decltype(&::cublasLtDestroy) destroy;
  decltype(&::cublasLtGetStatusName) status_name;
  decltype(&::cublasLtGetStatusString) status_string;
  decltype(&::cublasLtMatmul) matmul;
  decltype(&::cublasLtMatmulDescCreate) desc_create;
  decltype(&::cublasLtMatmulDescDestroy) desc_destroy;
  decltype(&::cublasLtMatmulDescSetAttribute) desc_set;
  decltype(&::cublasLtMatrixLayoutCreate) layout_create;
  decltype(&::cublasLtMatrixLayoutDestroy) layout_destroy;
  decltype(&::cublasLtMatmulPreferenceCreate) pref_create;
  decltype(&::cublasLtMatmulPreferenceDestroy) pref_destroy;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) pref_set;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) heuristic;
};

// Loads the library once (the soname this build was compiled against, found as the loader finds any
// library: LD_LIBRARY_PATH, the executable's run path, the system's; then the toolkit folder it was built
// with) and returns its entry points. Throws naming the library, the loader's reason and what to do.
const CublasLtApi& cublaslt();

}  // namespace tz::cuda
