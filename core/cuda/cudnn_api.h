// cuDNN's entry points, loaded with dlopen at the first attention that asks for cuDNN instead of linked
// (as cuBLASLt is, core/cuda/cublaslt_api.h): cuDNN is 1 GB of libraries that a run without cuDNN attention
// never needs, and a machine without them must still train (the attention then takes its own kernels).
// Only the backend graph API (cudnn_graph.h) is used. Include only from code in CUDA targets.
#pragma once

#include <cudnn_graph.h>

#include <cstddef>
#include <string>

#include "core/error.h"

namespace tz::cuda {

// The soname every cuDNN 9 installs; the loader finds its sub-libraries (libcudnn_graph.so.9,
// libcudnn_engines_*.so.9, ...) beside it or on the loader's path.
inline constexpr const char* kCudnnSoname = "libcudnn.so.9";

struct CudnnApi {
  std::string library;  // the name it was loaded as
  decltype(&::cudnnGetVersion) get_version;
  decltype(&::cudnnGetCudartVersion) get_cudart_version;
  decltype(&::cudnnGetErrorString) error_string;
  decltype(&::cudnnGetLastErrorString) last_error;
  decltype(&::cudnnCreate) create;
  decltype(&::cudnnDestroy) destroy;
  decltype(&::cudnnSetStream) set_stream;
  decltype(&::cudnnBackendCreateDescriptor) create_descriptor;
  decltype(&::cudnnBackendDestroyDescriptor) destroy_descriptor;
  decltype(&::cudnnBackendSetAttribute) set_attribute;
  decltype(&::cudnnBackendGetAttribute) get_attribute;
  decltype(&::cudnnBackendFinalize) finalize;
  decltype(&::cudnnBackendExecute) execute;

  // "CUDNN_STATUS_BAD_PARAM" and cuDNN's own last message for it, when it left one.
  std::string describe(cudnnStatus_t rc) const;
  // The loaded library's version, e.g. 91900 (major * 10000 + minor * 100 + patch).
  std::size_t version() const { return get_version(); }
  // cuDNN compiles its fused attention at run time with NVRTC (libnvrtc.so.<the CUDA major it was built
  // for>, opened through the loader's path; without it no engine builds the graphs): "" when that library
  // loads, else why not and what to do.
  std::string nvrtc_problem() const;
};

// Loads `library` once per name ("": kCudnnSoname as the loader finds it: LD_LIBRARY_PATH, the executable's
// run path, the system's; then in the folder the build found cuDNN in) and returns its entry points. Throws
// naming the library, the loader's reason and what to do; cuDNN older than 9 is refused by its version.
const CudnnApi& cudnn(const std::string& library = "");

// 91900 -> "9.19.0".
std::string cudnn_version_text(std::size_t version);

}  // namespace tz::cuda

// TZ_CUDNN_CHECK(api, call): a cuDNN call that must return CUDNN_STATUS_SUCCESS; `api` is the CudnnApi
// it was made through (the status and cuDNN's last message are described by the same library).
#define TZ_CUDNN_CHECK(api, call)                                                  \
  do {                                                                             \
    cudnnStatus_t tz_cudnn_rc_ = (call);                                           \
    TZ_CHECK_GEN("cuDNN call failed", tz_cudnn_rc_ == CUDNN_STATUS_SUCCESS, #call, \
                 (api).describe(tz_cudnn_rc_));                                    \
  } while (0)
