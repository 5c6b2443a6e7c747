// Shared pieces of the CUDA kernel tests (tests/cuda/*_test.cc): device arrays filled from and
// read back into host vectors, a fixture that skips without a GPU, the CPU backend the kernels are
// checked against, and comparisons that treat any two NaNs as equal (x86 and CUDA make different NaN
// bit patterns; a NaN where the CPU has a NaN is the right answer).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/cuda/cuda_runtime.h"
#include "core/dtype.h"
#include "tests/common/stream.h"

namespace tz::test {

// Device memory for n elements of T; frees in the destructor (which must not throw, so it logs).
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t n) : n_(n) { TZ_CUDA_CHECK(cudaMalloc(&ptr_, (n ? n : 1) * sizeof(T))); }
  DeviceArray(const std::vector<T>& host, cudaStream_t s) : DeviceArray(host.size()) { upload(host, s); }
  ~DeviceArray() {
    if (cudaFree(ptr_) != cudaSuccess) log_line("cudaFree failed in a test's DeviceArray");
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* data() { return ptr_; }
  std::size_t size() const { return n_; }
  void upload(const std::vector<T>& host, cudaStream_t s) {
    TZ_CUDA_CHECK(cudaMemcpyAsync(ptr_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice, s));
  }
  // Every byte `value` (0xff: each float a NaN, so an element a kernel forgets to write shows).
  void fill_bytes(int value, cudaStream_t s) { TZ_CUDA_CHECK(cudaMemsetAsync(ptr_, value, n_ * sizeof(T), s)); }
  std::vector<T> download(cudaStream_t s) {
    std::vector<T> host(n_);
    TZ_CUDA_CHECK(cudaMemcpyAsync(host.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost, s));
    TZ_CUDA_CHECK(cudaStreamSynchronize(s));  // the host reads the result next
    return host;
  }

 private:
  std::size_t n_;
  T* ptr_ = nullptr;
};

// A host CView's bytes copied to the device, seen through a CView of the same dtype.
struct DeviceParams {
  DeviceParams(CView host, std::size_t n, cudaStream_t s)
      : bytes(n * dtype_size(host.dtype)), dtype(host.dtype) {
    TZ_CUDA_CHECK(cudaMemcpyAsync(bytes.data(), host.ptr, bytes.size(), cudaMemcpyHostToDevice, s));
  }
  CView view() { return {bytes.data(), dtype}; }
  DeviceArray<std::uint8_t> bytes;
  DType dtype;
};

// Skips every test without a usable GPU; gives each test a stream and the CPU backend.
class CudaKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << cuda::unavailable_reason();
    TZ_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    cpu_ = make_cpu_backend();
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
  }
  Backend& cpu() { return *cpu_; }
  Stream& cpu_stream() { return test::cpu_stream(); }

  cudaStream_t stream_ = nullptr;
  std::unique_ptr<Backend> cpu_;
};

inline double value_of(float x) { return x; }
inline double value_of(double x) { return x; }
inline double value_of(bf16 x) { return bf16_to_float(x); }
inline double value_of(fp16 x) { return fp16_to_float(x); }

inline std::uint64_t bits_of(float x) { return float_bits(x); }
inline std::uint64_t bits_of(bf16 x) { return x.bits; }
inline std::uint64_t bits_of(fp16 x) { return x.bits; }
inline std::uint64_t bits_of(double x) {
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

// Bitwise equality element by element, any NaN matching any NaN.
template <typename T>
::testing::AssertionResult same_bits(const std::string& what, const std::vector<T>& got,
                                     const std::vector<T>& want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << what << ": size " << got.size() << " != " << want.size();
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool both_nan = std::isnan(value_of(got[i])) && std::isnan(value_of(want[i]));
    if (bits_of(got[i]) != bits_of(want[i]) && !both_nan && bad++ == 0) first = i;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  std::ostringstream os;
  os.precision(9);
  os << what << ": " << bad << " of " << got.size() << " elements differ; first at [" << first << "]: got "
     << value_of(got[first]) << " (0x" << std::hex << bits_of(got[first]) << "), want " << std::dec
     << value_of(want[first]) << " (0x" << std::hex << bits_of(want[first]) << ")";
  return ::testing::AssertionFailure() << os.str();
}

// |got[i] - want[i]| <= tol[i] element by element, a NaN matching only a NaN.
template <typename T>
::testing::AssertionResult within(const std::string& what, const std::vector<T>& got,
                                  const std::vector<T>& want, const std::vector<double>& tol) {
  if (got.size() != want.size() || tol.size() != want.size())
    return ::testing::AssertionFailure()
           << what << ": sizes " << got.size() << ", " << want.size() << ", " << tol.size();
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = value_of(got[i]), w = value_of(want[i]);
    const bool ok = (std::isnan(g) && std::isnan(w)) || std::fabs(g - w) <= tol[i] || g == w;
    if (!ok && bad++ == 0) first = i;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  std::ostringstream os;
  os.precision(9);
  os << what << ": " << bad << " of " << got.size() << " elements differ; first at [" << first << "]: got "
     << value_of(got[first]) << ", want " << value_of(want[first]) << ", |diff| "
     << std::fabs(value_of(got[first]) - value_of(want[first])) << " > tolerance " << tol[first];
  return ::testing::AssertionFailure() << os.str();
}

// The same with atol + rtol * |want| for every element.
template <typename T>
::testing::AssertionResult near(const std::string& what, const std::vector<T>& got,
                                const std::vector<T>& want, double atol, double rtol) {
  std::vector<double> tol(want.size());
  for (std::size_t i = 0; i < want.size(); ++i) tol[i] = atol + rtol * std::fabs(value_of(want[i]));
  return within(what, got, want, tol);
}

}  // namespace tz::test
