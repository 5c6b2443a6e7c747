// Tests core/cuda/adam_kernels.cu: the GPU AdamW gives the CPU backend's (CPU Adam's) bits in p, m, v
// and the working copy, for every working dtype and without one, over several steps (the bias
// corrections change each step). Skips without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/cuda/kernels.h"
#include "core/cuda/launch_config.h"
#include "tests/common/random.h"
#include "tests/common/typed_params.h"
#include "tests/cuda/kernel_test_util.h"

namespace tz {
namespace {

using test::DeviceArray;

class CudaAdam : public test::CudaKernelTest {};

constexpr std::size_t kN = cuda::kGridLap + 777;  // more than one grid lap, not a multiple of 256

struct State {
  std::vector<float> p, m, v, g;
};

State random_state(std::uint64_t seed) {
  test::Rng rng(seed);
  State s{rng.floats(kN, -1, 1), rng.floats(kN, -0.1, 0.1), rng.floats(kN, 0, 0.01), rng.floats(kN, -3, 3)};
  // Gradients that overflow the square, are tiny, zero, or not finite (the update must give NaN where
  // the CPU does), and moments at zero.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float g_special[] = {0.0f,
                             -0.0f,
                             1e-30f,
                             -1e-30f,
                             1e20f,
                             -1e20f,
                             3e38f,
                             inf,
                             -inf,
                             nan,
                             std::numeric_limits<float>::denorm_min()};
  for (std::size_t i = 0; i < std::size(g_special); ++i) s.g[i] = g_special[i];
  s.m[20] = 0;
  s.v[20] = 0;
  s.g[20] = 0;
  return s;
}

template <typename T>
std::vector<T> as(const std::vector<std::uint8_t>& bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

// Runs `steps` AdamW steps on the CPU backend and on the GPU from the same state; compares every array
// after each step.
void check_steps(Backend& cpu, Stream& cpu_stream, cudaStream_t stream, bool with_working, DType wt) {
  State host = random_state(11);
  DeviceArray<float> p(host.p, stream), m(host.m, stream), v(host.v, stream), g(host.g, stream);
  const std::size_t wbytes = kN * dtype_size(wt);
  std::vector<std::uint8_t> want_w(wbytes);
  DeviceArray<std::uint8_t> w(wbytes);
  AdamStep step;
  step.lr = 1e-3f;
  step.weight_decay = 0.1f;
  step.grad_scale = 0.5f;
  for (int k = 1; k <= 3; ++k) {
    SCOPED_TRACE("step " + std::to_string(k));
    step.step = k;
    cpu.adamw(cpu_stream, host.p.data(), host.m.data(), host.v.data(), host.g.data(), kN, step,
              with_working ? want_w.data() : nullptr, wt);
    cuda::adamw(stream, p.data(), m.data(), v.data(), g.data(), kN, step, with_working ? w.data() : nullptr,
                wt);
    EXPECT_TRUE(test::same_bits("p", p.download(stream), host.p));
    EXPECT_TRUE(test::same_bits("m", m.download(stream), host.m));
    EXPECT_TRUE(test::same_bits("v", v.download(stream), host.v));
    if (!with_working) continue;
    const std::vector<std::uint8_t> got_w = w.download(stream);
    switch (wt) {
      case DType::f32:
        EXPECT_TRUE(test::same_bits("working", as<float>(got_w), as<float>(want_w)));
        break;
      case DType::bf16:
        EXPECT_TRUE(test::same_bits("working", as<bf16>(got_w), as<bf16>(want_w)));
        break;
      default:
        EXPECT_TRUE(test::same_bits("working", as<fp16>(got_w), as<fp16>(want_w)));
        break;
    }
  }
}

TEST_F(CudaAdam, GivesTheCpuBitsForEveryWorkingDtypeOverThreeSteps) {
  for (DType wt : test::kParamDtypes) {
    SCOPED_TRACE(test::dtype_label(wt));
    check_steps(cpu(), cpu_stream(), stream_, true, wt);
  }
}

TEST_F(CudaAdam, GivesTheCpuBitsWithoutAWorkingCopy) {
  check_steps(cpu(), cpu_stream(), stream_, false, DType::f32);
}

TEST_F(CudaAdam, RefusesAStepBelowOneAndAnIntegerWorkingType) {
  DeviceArray<float> buf(4);
  AdamStep step;
  step.step = 0;
  EXPECT_THROW(
      cuda::adamw(stream_, buf.data(), buf.data(), buf.data(), buf.data(), 4, step, nullptr, DType::f32),
      Error);
  step.step = 1;
  EXPECT_THROW(
      cuda::adamw(stream_, buf.data(), buf.data(), buf.data(), buf.data(), 4, step, buf.data(), DType::i32),
      Error);
}

}  // namespace
}  // namespace tz
