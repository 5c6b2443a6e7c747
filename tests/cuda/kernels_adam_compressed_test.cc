// Tests core/cuda/adam_compressed_kernels.cu: the GPU AdamW on compressed states gives the CPU's
// definition's bits (adamw_compressed on the scalar path, core/adam_compressed.h) in the master, the
// moments, the int8 codes and the blocks' absmax, for every format pair, over three steps, on a shard
// that starts on a block of its tensor and ends in a short block, with an all-zero block, a block of
// non-finite gradients and single NaN, inf and overflowing gradient elements. Skips without a GPU.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/adam_compressed.h"
#include "core/blockwise_quant.h"
#include "core/cuda/kernels.h"
#include "core/quant_map.h"
#include "tests/common/random.h"
#include "tests/cuda/kernel_test_util.h"

namespace tz {
namespace {

using test::DeviceArray;

class CudaCompressedAdam : public test::CudaKernelTest {};

constexpr std::size_t kN = 6 * kQuantBlock + 77;  // a short last block
constexpr ShardPosition kAt{3 * kQuantBlock, 1234};  // the shard's first element in its tensor: a block boundary

// The host's states of one format pair, and the same on the device.
struct HostStates {
  std::vector<float> p32, m32, v32, m_abs, v_abs;
  std::vector<bf16> p16, m16, v16;
  std::vector<std::uint8_t> mq, vq;
};

HostStates random_states(MomentFormat mf, MasterFormat pf) {
  test::Rng rng(5);
  HostStates h;
  h.p32 = rng.floats(kN, -1, 1);
  std::vector<float> m = rng.floats(kN, -0.1, 0.1), v = rng.floats(kN, 0, 0.01);
  for (std::size_t i = 0; i < kQuantBlock; ++i) m[kQuantBlock + i] = v[kQuantBlock + i] = 0;  // block 1: all zero
  if (pf == MasterFormat::bf16_sr)
    for (float x : h.p32) h.p16.push_back(float_to_bf16(x));
  switch (mf) {
    case MomentFormat::fp32:
      h.m32 = m, h.v32 = v;
      break;
    case MomentFormat::bf16:
      for (std::size_t i = 0; i < kN; ++i) h.m16.push_back(float_to_bf16(m[i])), h.v16.push_back(float_to_bf16(v[i]));
      break;
    case MomentFormat::int8:
      h.mq.resize(kN), h.vq.resize(kN), h.m_abs.resize(quant_blocks(kN)), h.v_abs.resize(quant_blocks(kN));
      quantize_blockwise(m.data(), kN, dynamic_map(true), h.mq.data(), h.m_abs.data());
      quantize_blockwise(v.data(), kN, dynamic_map(false), h.vq.data(), h.v_abs.data(), /*keep_nonzero=*/true);
      break;
  }
  return h;
}

std::vector<float> gradients() {
  test::Rng rng(9);
  std::vector<float> g = rng.floats(kN, -3, 3);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (std::size_t i = 0; i < kQuantBlock; ++i) g[2 * kQuantBlock + i] = i % 2 ? nan : -inf;  // block 2
  g[5] = nan, g[6] = inf, g[7] = 1e20f, g[8] = -3e38f, g[9] = 0, g[10] = 1e-30f;
  for (std::size_t i = 0; i < kQuantBlock; ++i) g[kQuantBlock + i] = 0;  // block 1 stays all zero
  return g;
}

// The arrays of one format pair, wherever they are: {fp32 master, bf16 master, fp32 m, fp32 v, bf16 m, bf16
// v, m codes, v codes} and the absmax arrays.
CompressedStates states(MomentFormat mf, MasterFormat pf, const std::array<void*, 8>& a, float* m_abs, float* v_abs) {
  CompressedStates s;
  s.moments = mf, s.master = pf;
  s.p = a[pf == MasterFormat::bf16_sr ? 1 : 0];
  const int at = mf == MomentFormat::fp32 ? 2 : mf == MomentFormat::bf16 ? 4 : 6;
  s.m = a[std::size_t(at)], s.v = a[std::size_t(at) + 1];
  if (mf == MomentFormat::int8) s.m_absmax = m_abs, s.v_absmax = v_abs;
  return s;
}

template <typename T>
struct Mirror {  // a host vector's device copy, when the format has it
  Mirror(const std::vector<T>& h, cudaStream_t s) : d(h.empty() ? 1 : h.size()) {
    if (!h.empty()) d.upload(h, s);
  }
  DeviceArray<T> d;
};

TEST_F(CudaCompressedAdam, GivesTheCpuDefinitionsBitsForEveryFormatOverThreeSteps) {
  for (MomentFormat mf : {MomentFormat::fp32, MomentFormat::bf16, MomentFormat::int8})
    for (MasterFormat pf : {MasterFormat::fp32, MasterFormat::bf16_sr}) {
      SCOPED_TRACE(std::string(moment_format_name(mf)) + " moments, " + std::string(master_format_name(pf)) + " master");
      HostStates host = random_states(mf, pf);
      Mirror<float> p32(host.p32, stream_), m32(host.m32, stream_), v32(host.v32, stream_), ma(host.m_abs, stream_),
          va(host.v_abs, stream_);
      Mirror<bf16> p16(host.p16, stream_), m16(host.m16, stream_), v16(host.v16, stream_);
      Mirror<std::uint8_t> mq(host.mq, stream_), vq(host.vq, stream_);
      const std::vector<float> g = gradients();
      DeviceArray<float> dg(g, stream_);
      const CompressedStates on_host =
          states(mf, pf, {host.p32.data(), host.p16.data(), host.m32.data(), host.v32.data(), host.m16.data(),
                          host.v16.data(), host.mq.data(), host.vq.data()}, host.m_abs.data(), host.v_abs.data());
      const CompressedStates dev =
          states(mf, pf, {p32.d.data(), p16.d.data(), m32.d.data(), v32.d.data(), m16.d.data(), v16.d.data(),
                          mq.d.data(), vq.d.data()}, ma.d.data(), va.d.data());
      AdamStep step;
      step.lr = 1e-3f, step.weight_decay = 0.1f, step.grad_scale = 0.5f;
      for (int k = 1; k <= 3; ++k) {
        SCOPED_TRACE("step " + std::to_string(k));
        step.step = k;
        adamw_compressed(CpuAdamIsa::scalar, step, on_host, g.data(), kN, kAt);
        cuda::adamw_compressed(stream_, step, dev, dg.data(), kN, kAt);
        if (pf == MasterFormat::fp32) EXPECT_TRUE(test::same_bits("p", p32.d.download(stream_), host.p32));
        else EXPECT_TRUE(test::same_bits("p", p16.d.download(stream_), host.p16));
        if (mf == MomentFormat::fp32) {
          EXPECT_TRUE(test::same_bits("m", m32.d.download(stream_), host.m32));
          EXPECT_TRUE(test::same_bits("v", v32.d.download(stream_), host.v32));
        } else if (mf == MomentFormat::bf16) {
          EXPECT_TRUE(test::same_bits("m", m16.d.download(stream_), host.m16));
          EXPECT_TRUE(test::same_bits("v", v16.d.download(stream_), host.v16));
        } else {
          EXPECT_EQ(mq.d.download(stream_), host.mq) << "m codes";
          EXPECT_EQ(vq.d.download(stream_), host.vq) << "v codes";
          EXPECT_TRUE(test::same_bits("m absmax", ma.d.download(stream_), host.m_abs));
          EXPECT_TRUE(test::same_bits("v absmax", va.d.download(stream_), host.v_abs));
        }
      }
    }
}

TEST_F(CudaCompressedAdam, RefusesInt8MomentsOnAShardOffABlock) {
  DeviceArray<float> buf(kQuantBlock);
  DeviceArray<std::uint8_t> codes(kQuantBlock);
  CompressedStates s;
  s.moments = MomentFormat::int8;
  s.p = buf.data(), s.m = codes.data(), s.v = codes.data(), s.m_absmax = buf.data(), s.v_absmax = buf.data();
  AdamStep step;
  step.step = 1;
  EXPECT_THROW(cuda::adamw_compressed(stream_, step, s, buf.data(), kQuantBlock, ShardPosition{100, 0}), Error);
}

}  // namespace
}  // namespace tz
