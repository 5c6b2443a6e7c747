// Tests core/cuda/cast_kernels.h: the device conversions give bitwise the same results as the host
// dtype.h functions (they share that code). Skips when no CUDA device is usable.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/cuda/cast_kernels.h"
#include "core/cuda/cuda_runtime.h"
#include "core/dtype.h"
#include "tests/common/compare.h"
#include "tests/common/random.h"
#include "tests/common/reference_rounding.h"
#include "tests/cuda/kernel_test_util.h"

namespace tz {
namespace {

using test::DeviceArray;

class CudaCast : public test::CudaKernelTest {};

// More elements than one launch's 65535 blocks x 256 threads cover, so the grid-stride loop runs
// a second lap, and not a multiple of 256. Random bit patterns (every exponent, NaN, Inf) plus every
// fp16 and bf16 midpoint and the specials.
std::vector<float> f32_inputs() {
  test::Rng rng(90);
  std::vector<float> v(std::size_t(65535) * 256 + 12345);
  for (auto& x : v) x = bits_float(rng.bits32());
  std::size_t at = 0;
  for (std::uint32_t lo = 0; lo < 0x7bff; ++lo) {
    const float mid =
        float((test::fp16_value(std::uint16_t(lo)) + test::fp16_value(std::uint16_t(lo + 1))) / 2);
    v[at++] = mid;
    v[at++] = -mid;
  }
  for (std::uint32_t lo = 0; lo < 0x7f7f; ++lo) {
    const float mid =
        float((test::bf16_value(std::uint16_t(lo)) + test::bf16_value(std::uint16_t(lo + 1))) / 2);
    v[at++] = mid;
    v[at++] = -mid;
  }
  for (float x : {0.0f, -0.0f, 65504.0f, 65520.0f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                  bits_float(0x7f800001u), bits_float(0xffffffffu), std::numeric_limits<float>::denorm_min()})
    v[at++] = x;
  return v;
}

TEST_F(CudaCast, F32ToBf16MatchesTheHostConversionBitwise) {
  const std::vector<float> in = f32_inputs();
  DeviceArray<float> src(in.size());
  DeviceArray<bf16> dst(in.size());
  src.upload(in, stream_);
  cuda::cast_f32_to_bf16(dst.data(), src.data(), in.size(), stream_);
  const std::vector<bf16> got = dst.download(stream_);
  std::vector<std::uint16_t> got_bits(in.size()), want_bits(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    got_bits[i] = got[i].bits;
    want_bits[i] = float_to_bf16(in[i]).bits;
  }
  EXPECT_TRUE(test::all_bits_equal("bf16", got_bits.data(), want_bits.data(), in.size()));
}

TEST_F(CudaCast, F32ToFp16MatchesTheHostConversionBitwise) {
  const std::vector<float> in = f32_inputs();
  DeviceArray<float> src(in.size());
  DeviceArray<fp16> dst(in.size());
  src.upload(in, stream_);
  cuda::cast_f32_to_fp16(dst.data(), src.data(), in.size(), stream_);
  const std::vector<fp16> got = dst.download(stream_);
  std::vector<std::uint16_t> got_bits(in.size()), want_bits(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    got_bits[i] = got[i].bits;
    want_bits[i] = float_to_fp16(in[i]).bits;
  }
  EXPECT_TRUE(test::all_bits_equal("fp16", got_bits.data(), want_bits.data(), in.size()));
}

TEST_F(CudaCast, Bf16ToF32MatchesTheHostConversionBitwiseForEveryPattern) {
  std::vector<bf16> in(65536);
  for (std::uint32_t b = 0; b < 65536; ++b) in[b].bits = std::uint16_t(b);
  DeviceArray<bf16> src(in.size());
  DeviceArray<float> dst(in.size());
  src.upload(in, stream_);
  cuda::cast_bf16_to_f32(dst.data(), src.data(), in.size(), stream_);
  const std::vector<float> got = dst.download(stream_);
  std::vector<std::uint32_t> got_bits(in.size()), want_bits(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    got_bits[i] = float_bits(got[i]);
    want_bits[i] = float_bits(bf16_to_float(in[i]));
  }
  EXPECT_TRUE(test::all_bits_equal("f32", got_bits.data(), want_bits.data(), in.size()));
}

TEST_F(CudaCast, AnEmptyCastLaunchesNothingAndSucceeds) {
  cuda::cast_f32_to_bf16(nullptr, nullptr, 0, stream_);
  EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
}

}  // namespace
}  // namespace tz
