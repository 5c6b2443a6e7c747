// Tests core/cuda/xent_kernels.cu against the CPU backend: losses within 1e-5 (absolute and relative)
// and dlogits within 1e-5 relative or 1e-6 of dloss (the sums of exponentials differ only in their
// order of adds), padded columns zeroed, NaN rows NaN; rows wider and narrower than the block; and the
// results bitwise equal to themselves on a second run. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/cuda/kernels.h"
#include "tests/common/random.h"
#include "tests/cuda/kernel_test_util.h"

namespace tz {
namespace {

using test::DeviceArray;

class CudaXent : public test::CudaKernelTest {
 protected:
  void check(int N, int V, int Vp, std::uint64_t seed);
};

void CudaXent::check(int N, int V, int Vp, std::uint64_t seed) {
  SCOPED_TRACE("N " + std::to_string(N) + " V " + std::to_string(V) + " Vp " + std::to_string(Vp));
  test::Rng rng(seed);
  const std::size_t NV = std::size_t(N) * Vp;
  std::vector<float> logits = rng.floats(NV, -5, 5);
  std::vector<std::int32_t> targets(N);
  for (auto& t : targets) t = rng.below(V);
  for (int n = 0; n < N; ++n)
    for (int v = V; v < Vp; ++v) logits[std::size_t(n) * Vp + v] = 7.0f;  // padding: must come back 0
  auto row = [&](int n) { return logits.data() + std::size_t(n) * Vp; };
  if (N > 4) {
    row(1)[targets[1]] = 45.0f;  // the target far above the rest: p ~ 1, its gradient ~ 0
    row(2)[V / 2] = 80.0f;       // the target 180 below the max: loss from the log-sum-exp, p underflows
    row(2)[targets[2] = (V / 2 + 1) % V] = -100.0f;
    row(3)[V - 1] = std::numeric_limits<float>::quiet_NaN();  // NaN anywhere: the row's loss is NaN
    for (int v = 0; v < V; ++v) row(4)[v] = 0.25f;            // all equal: a uniform softmax
  }
  const float dloss = 1.0f / float(N);
  std::vector<float> want_logits = logits, want_losses(N);
  cpu().softmax_xent(cpu_stream(), want_losses.data(), want_logits.data(), targets.data(), N, V, Vp, dloss);

  DeviceArray<float> d_logits(logits, stream_), d_losses(N);
  DeviceArray<std::int32_t> d_targets(targets, stream_);
  cuda::softmax_xent(stream_, d_losses.data(), d_logits.data(), d_targets.data(), N, V, Vp, dloss);
  const std::vector<float> losses = d_losses.download(stream_), dlogits = d_logits.download(stream_);
  EXPECT_TRUE(test::near("losses", losses, want_losses, 1e-5, 1e-5));
  EXPECT_TRUE(test::near("dlogits", dlogits, want_logits, 1e-6 * dloss, 1e-5));
  for (int n = 0; n < N; ++n)
    for (int v = V; v < Vp; ++v)
      ASSERT_EQ(dlogits[std::size_t(n) * Vp + v], 0.0f) << "row " << n << " column " << v;

  d_logits.upload(logits, stream_);
  cuda::softmax_xent(stream_, d_losses.data(), d_logits.data(), d_targets.data(), N, V, Vp, dloss);
  EXPECT_TRUE(test::same_bits("losses run twice", d_losses.download(stream_), losses));
  EXPECT_TRUE(test::same_bits("dlogits run twice", d_logits.download(stream_), dlogits));
}

TEST_F(CudaXent, Gpt2VocabularyWithPaddingMatchesTheCpu) { check(37, 50257, 50304, 100); }

TEST_F(CudaXent, RowsNarrowerThanTheBlockMatchTheCpu) {
  check(5, 3, 8, 101);        // most threads see no logit: their empty (max, sum) pairs must merge to nothing
  check(6, 1, 1, 102);        // one class: loss 0, gradient 0
  check(7, 1000, 1000, 103);  // no padding, not a multiple of the block
}

TEST_F(CudaXent, RefusesAVocabularyWiderThanItsPaddedRow) {
  DeviceArray<float> buf(16);
  DeviceArray<std::int32_t> tgt(1);
  EXPECT_THROW(cuda::softmax_xent(stream_, buf.data(), buf.data(), tgt.data(), 1, 9, 8, 1.0f), Error);
}

}  // namespace
}  // namespace tz
