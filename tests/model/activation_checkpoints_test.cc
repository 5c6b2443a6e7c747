// Activation checkpoints on the host tier (device staging and copy streams) against checkpoints on the
// device: the same losses and gradients bit for bit, and the staging buffers in the plan.
#include "model/activation_checkpoints.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <tuple>

#include "core/backend.h"
#include "model/gpt.h"
#include "model/gpt_init.h"
#include "tests/model/host_provider.h"

namespace tz {
namespace {

constexpr int B = 2, T = 5;

GptConfig small_config(int n_layer) {
  GptConfig cfg;
  cfg.n_layer = n_layer;
  cfg.n_head = 2;
  cfg.n_embd = 8;
  cfg.vocab_size = 20;
  cfg.padded_vocab_size = GptConfig::pad_vocab(cfg.vocab_size);
  cfg.max_seq_len = 8;
  return cfg;
}

// What one run reports: the validation loss sum, each micro-step's loss sum, and the accumulated
// gradients of every group.
struct Outcome {
  double val = 0;
  std::vector<double> steps;
  std::vector<std::vector<float>> grads;
};

// A validation forward, then two micro-steps of forward and backward accumulating into the same
// gradients (each with its own tokens and the 1/2 loss scale of two accumulation steps).
Outcome run(const GptConfig& cfg, DType dt, ActivationCheckpointing ckpt, MemoryKind kind) {
  const ParamLayout layout = ParamLayout::build(cfg);
  test::HostProvider prov;
  init_gpt_params(cfg, layout, 42, prov.p);
  std::mt19937 rng(5);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  for (auto& g : prov.p)
    for (float& x : g) x += noise(rng);  // every parameter matters (padded rows get no gradient anyway)
  if (dt != DType::f32) prov.set_dtype(dt);
  prov.zero_grads();
  std::mt19937 trng(9);
  auto tokens = [&] {
    std::vector<std::int32_t> v(B * T);
    for (auto& t : v) t = int(trng() % cfg.vocab_size);
    return v;
  };

  auto dev = make_cpu_device();
  auto stream = dev->create_stream();
  Gpt model(*dev, cfg, {B, T}, dt, ckpt, kind);
  Buffer<double> sum(*dev, 1, "loss sum");
  auto loss = [&](bool with_backward) {
    double host = 0;
    dev->backend().copy_async(*stream, sum.data(), &host, sizeof host);
    const auto in = tokens(), tgt = tokens();
    model.forward(prov, in.data(), tgt.data(), 0.5f, sum.data(), *stream);
    if (with_backward) model.backward(prov, *stream);
    dev->backend().copy_async(*stream, &host, sum.data(), sizeof host);
    stream->synchronize();
    return host;
  };
  Outcome o;
  o.val = loss(false);
  for (int step = 0; step < 2; ++step) o.steps.push_back(loss(true));
  o.grads = prov.g;
  return o;
}

using Case = std::tuple<DType, int, ActivationCheckpointing>;

class HostTierCheckpoints : public ::testing::TestWithParam<Case> {};

// n_layer 3 and 4: the last checkpoint ends in either buffer of the ring, so backward starts from
// either; with and without recomputation (offload without --checkpoint-activations is allowed).
TEST_P(HostTierCheckpoints, GiveBitwiseTheLossesAndGradientsOfCheckpointsOnTheDevice) {
  const auto [dt, n_layer, ckpt] = GetParam();
  const GptConfig cfg = small_config(n_layer);
  const Outcome want = run(cfg, dt, ckpt, MemoryKind::device);
  const Outcome got = run(cfg, dt, ckpt, MemoryKind::pinned_host);
  EXPECT_EQ(got.val, want.val);
  EXPECT_EQ(got.steps, want.steps);
  ASSERT_EQ(got.grads.size(), want.grads.size());
  for (std::size_t g = 0; g < want.grads.size(); ++g) {
    ASSERT_EQ(got.grads[g].size(), want.grads[g].size());
    for (std::size_t i = 0; i < want.grads[g].size(); ++i)
      ASSERT_EQ(got.grads[g][i], want.grads[g][i]) << "group " << g << " element " << i;
    EXPECT_EQ(std::memcmp(got.grads[g].data(), want.grads[g].data(), want.grads[g].size() * sizeof(float)), 0)
        << "group " << g;
  }
  // Not a vacuous comparison: the gradients are not all zero.
  bool nonzero = false;
  for (const auto& g : want.grads)
    for (float x : g) nonzero |= x != 0.0f;
  EXPECT_TRUE(nonzero);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, HostTierCheckpoints,
    ::testing::Combine(::testing::Values(DType::f32, DType::bf16), ::testing::Values(3, 4),
                       ::testing::Values(ActivationCheckpointing::per_block, ActivationCheckpointing::off)),
    [](const ::testing::TestParamInfo<Case>& i) {
      return std::string(std::get<0>(i.param) == DType::f32 ? "fp32" : "bf16") + "_" +
             std::to_string(std::get<1>(i.param)) + "_layers_" +
             (std::get<2>(i.param) == ActivationCheckpointing::per_block ? "recomputed" : "kept");
    });

// The staging buffers are device memory the plan lists (so `tierzero plan` counts them): B*T*C floats
// each, 3 with recomputation, 2 without, none when the checkpoints stay on the device.
TEST(ActivationCheckpoints, ThePlanListsTheDeviceStagingOnlyForCheckpointsOnTheHostTier) {
  const GptConfig cfg = small_config(3);
  const std::size_t ckpt_bytes = std::size_t(B) * T * cfg.n_embd * 4;
  for (auto ck : {ActivationCheckpointing::per_block, ActivationCheckpointing::off}) {
    const auto on_device = Gpt::buffers(cfg, {B, T}, DType::bf16, ck, MemoryKind::device);
    const auto on_host = Gpt::buffers(cfg, {B, T}, DType::bf16, ck, MemoryKind::pinned_host);
    const int want = ck == ActivationCheckpointing::per_block ? 3 : 2;
    int staging = 0;
    for (const BufferSpec& s : on_host) {
      if (s.name.rfind("activation checkpoint staging [", 0) != 0) continue;
      EXPECT_EQ(s.name, ActivationCheckpoints::staging_name(staging));
      EXPECT_EQ(s.kind, MemoryKind::device);
      EXPECT_EQ(s.cls, "activations and scratch");
      EXPECT_EQ(s.bytes, ckpt_bytes);
      ++staging;
    }
    EXPECT_EQ(staging, want);
    for (const BufferSpec& s : on_device) EXPECT_EQ(s.name.find("staging"), std::string::npos) << s.name;
    // The L + 1 checkpoints leave the device; the staging buffers come in their place.
    EXPECT_EQ(total_bytes(on_device, MemoryKind::device) - total_bytes(on_host, MemoryKind::device),
              (cfg.n_layer + 1 - want) * ckpt_bytes);
    EXPECT_EQ(total_bytes(on_host, MemoryKind::pinned_host), (cfg.n_layer + 1) * ckpt_bytes);
  }
}

}  // namespace
}  // namespace tz
