// cuDNN is loaded at run time (core/cuda/cudnn_api.h), never linked: loading it needs no GPU, what it returns
// are the library's own entry points, and a library that is not there is refused naming it, the loader's
// reason and what to do. The loading tests skip where no cuDNN 9 is installed.
#include "core/cuda/cudnn_api.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/common/error_message.h"

namespace tz::cuda {
namespace {

// The installed cuDNN, or a skip naming why there is none.
const CudnnApi* installed(std::string& why) {
  try {
    return &cudnn();
  } catch (const Error& e) {
    why = e.what();
    return nullptr;
  }
}

TEST(CudnnApi, LoadsTheLibraryWithoutAGpuAndItsEntryPointsAnswer) {
  std::string why;
  const CudnnApi* api = installed(why);
  if (!api) GTEST_SKIP() << why;
  EXPECT_GE(api->version(), 90000u);
  EXPECT_LT(api->version(), 100000u);
  EXPECT_STREQ(api->error_string(CUDNN_STATUS_SUCCESS), "CUDNN_STATUS_SUCCESS");
  EXPECT_NE(api->describe(CUDNN_STATUS_BAD_PARAM).find("CUDNN_STATUS_BAD_PARAM"), std::string::npos);
  for (const void* fn :
       {(const void*)api->create, (const void*)api->destroy, (const void*)api->set_stream,
        (const void*)api->create_descriptor, (const void*)api->destroy_descriptor,
        (const void*)api->set_attribute, (const void*)api->get_attribute, (const void*)api->finalize,
        (const void*)api->execute, (const void*)api->last_error, (const void*)api->get_cudart_version})
    EXPECT_NE(fn, nullptr);
  // The same object as the loader's: the pointer lies inside a libcudnn library.
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<const void*>(api->get_version), &info), 0);
  EXPECT_NE(std::string(info.dli_fname).find("libcudnn"), std::string::npos) << info.dli_fname;
  EXPECT_EQ(&cudnn(), api);              // loaded once
  EXPECT_EQ(&cudnn(kCudnnSoname), api);  // "" is the soname
  EXPECT_EQ(api->library, kCudnnSoname);
}

TEST(CudnnApi, AMissingLibraryIsRefusedNamingItTheLoadersReasonAndTheFix) {
  const std::string m = testing::error_message([] { cudnn("libcudnn_tierzero_absent.so.9"); });
  EXPECT_NE(m.find("cannot load cuDNN (libcudnn_tierzero_absent.so.9)"), std::string::npos) << m;
  EXPECT_NE(m.find("cannot open shared object file"), std::string::npos) << m;  // dlerror's words
  EXPECT_NE(m.find("LD_LIBRARY_PATH"), std::string::npos) << m;
  EXPECT_NE(m.find("--attention-math bf16"), std::string::npos) << m;
  // Not remembered as loaded: it fails again, the same way.
  EXPECT_NE(testing::error_message([] { cudnn("libcudnn_tierzero_absent.so.9"); }).find("cannot load cuDNN"),
            std::string::npos);
}

TEST(CudnnApi, VersionsReadAsMajorMinorPatch) {
  EXPECT_EQ(cudnn_version_text(91900), "9.19.0");
  EXPECT_EQ(cudnn_version_text(90100), "9.1.0");
  EXPECT_EQ(cudnn_version_text(91501), "9.15.1");
}

}  // namespace
}  // namespace tz::cuda
