// cuBLASLt is loaded at run time (core/cuda/cublaslt_api.h), not linked: loading it needs no GPU, and
// what it returns are the library's own entry points (its status names, as cublasLt.h spells them).
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <string>

#include "core/cuda/cublaslt_api.h"

namespace tz::cuda {
namespace {

TEST(CublasLtApi, LoadsTheLibraryWithoutAGpuAndItsEntryPointsAnswer) {
  const CublasLtApi& api = cublaslt();
  EXPECT_STREQ(api.status_name(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
  EXPECT_STREQ(api.status_name(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED");
  EXPECT_NE(std::string(api.status_string(CUBLAS_STATUS_NOT_SUPPORTED)), "");
  for (const void* fn : {(const void*)api.create, (const void*)api.destroy, (const void*)api.matmul,
                         (const void*)api.desc_create, (const void*)api.desc_destroy, (const void*)api.desc_set,
                         (const void*)api.layout_create, (const void*)api.layout_destroy,
                         (const void*)api.pref_create, (const void*)api.pref_destroy, (const void*)api.pref_set,
                         (const void*)api.heuristic})
    EXPECT_NE(fn, nullptr);
  // The same object as the loader's: the pointer lies inside libcublasLt.
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<const void*>(api.matmul), &info), 0);
  EXPECT_NE(std::string(info.dli_fname).find("libcublasLt.so"), std::string::npos) << info.dli_fname;
  EXPECT_EQ(&cublaslt(), &api);  // loaded once
}

}  // namespace
}  // namespace tz::cuda
