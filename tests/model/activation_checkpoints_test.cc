// Activation checkpoints on the host tier (device staging and copy streams) against checkpoints on the
// device: the same losses and gradients bit for bit; the copies' order on streams that run later, in any
// order their events allow; and the staging buffers in the plan.
#include "model/activation_checkpoints.h"

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <random>
#include <tuple>

#include "core/backend.h"
#include "model/gpt.h"
#include "model/gpt_init.h"
#include "tests/common/deferred_device.h"
#include "tests/model/host_provider.h"

namespace tz {
namespace {

constexpr int B = 2, T = 5;

ModelConfig small_config(int n_layer) {
  ModelConfig cfg;
  cfg.n_layer = n_layer;
  cfg.n_head = 2;
  cfg.n_embd = 8;
  cfg.vocab_size = 20;
  cfg.padded_vocab_size = ModelConfig::pad_vocab(cfg.vocab_size);
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
Outcome run(const ModelConfig& cfg, DType dt, ActivationCheckpointing ckpt, MemoryKind kind) {
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
  const ModelConfig cfg = small_config(n_layer);
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

// One schedule of host-tier checkpoints of 16 floats on a DeferredDevice, which runs nothing until
// drain() and then the streams in a random order their events allow (seed): a validation forward, then
// forward and backward twice, all enqueued before anything runs, as on a GPU where the host runs ahead.
// Each kernel is a fill with a byte of its own (call, checkpoint); each kernel read a copy into a probe.
// Every read must see the checkpoint the latest forward wrote, whatever the copy streams did meanwhile.
void check_schedule(int n_layer, ActivationCheckpointing ck, unsigned seed) {
  constexpr std::size_t kBytes = 16 * sizeof(float);
  auto pattern = [](int call, int l) { return 1 + 16 * call + l; };
  test::DeferredDevice dev(seed);
  std::vector<BufferSpec> specs;
  for (int l = 0; l <= n_layer; ++l)
    specs.push_back({ActivationCheckpoints::checkpoint_name(l), "activation checkpoints",
                     MemoryKind::pinned_host, kBytes});
  for (int i = 0; i < ActivationCheckpoints::staging_count(MemoryKind::pinned_host, ck); ++i)
    specs.push_back(
        {ActivationCheckpoints::staging_name(i), "activations and scratch", MemoryKind::device, kBytes});
  PlannedBuffers planned(dev, specs);
  ActivationCheckpoints ckpts(dev, n_layer, MemoryKind::pinned_host, ck, DType::f32, planned);
  planned.expect_all_taken();
  std::unique_ptr<Stream> s = dev.create_stream();
  Backend& be = dev.backend();
  struct Read {
    int call, l;
    std::vector<unsigned char> got;
  };
  std::deque<Read> reads;  // stable addresses for the copies still to run
  auto read = [&](int call, int l, CView p) {
    reads.push_back({call, l, std::vector<unsigned char>(kBytes)});
    be.copy_async(*s, reads.back().got.data(), p.ptr, kBytes);
  };
  auto forward = [&](int call) {
    be.memset_async(*s, ckpts.write(*s, 0).ptr, pattern(call, 0), kBytes);  // the encoder
    ckpts.written(*s, 0);
    for (int l = 0; l < n_layer; ++l) {
      const CView in = ckpts.reading(l);
      const View out = ckpts.write(*s, l + 1);
      read(call, l, in);  // block l
      be.memset_async(*s, out.ptr, pattern(call, l + 1), kBytes);
      ckpts.written(*s, l + 1);
    }
    read(call, n_layer, ckpts.reading(n_layer));  // the final LayerNorm
    ckpts.finish_forward(*s);
  };
  auto backward = [&](int call) {
    ckpts.start_backward(*s);
    read(call, n_layer, ckpts.load(*s, n_layer));  // the final LayerNorm
    ckpts.done(*s, n_layer);
    for (int l = n_layer - 1; l >= 0; --l) {
      const CView in = ckpts.load(*s, l);
      read(call, l, in);  // the recomputation, then the block's backward
      if (ck == ActivationCheckpointing::per_block)
        be.memset_async(*s, ckpts.recompute_output(l).ptr, 0xEE, kBytes);
      read(call, l, in);
      ckpts.done(*s, l);
    }
  };
  forward(0);
  for (int call : {1, 2}) {
    forward(call);
    backward(call);
  }
  ASSERT_EQ(dev.ran(), 0u);  // nothing ran as it was enqueued
  dev.drain();
  for (const Read& r : reads)
    for (unsigned char b : r.got)
      ASSERT_EQ(int(b), pattern(r.call, r.l))
          << "call " << r.call << " checkpoint " << r.l << " seed " << seed;
}

TEST(ActivationCheckpoints, EveryReadSeesItsCheckpointInEveryOrderTheEventsAllow) {
  for (int n_layer : {1, 2, 3, 4})
    for (auto ck : {ActivationCheckpointing::per_block, ActivationCheckpointing::off})
      for (unsigned seed = 0; seed < 200; ++seed) {
        SCOPED_TRACE(::testing::Message()
                     << n_layer << " layers, "
                     << (ck == ActivationCheckpointing::per_block ? "recomputed" : "kept"));
        check_schedule(n_layer, ck, seed);
        if (::testing::Test::HasFatalFailure()) return;
      }
}

// The staging buffers are device memory the plan lists (so `tierzero plan` counts them): B*T*C
// activations each (2 bytes in a bf16 run, 4 with --activation-dtype fp32), 3 with recomputation, 2
// without, none when the checkpoints stay on the device.
TEST(ActivationCheckpoints, ThePlanListsTheDeviceStagingOnlyForCheckpointsOnTheHostTier) {
  const ModelConfig cfg = small_config(3);
  for (const Precision pr : {Precision{DType::bf16}, Precision{DType::bf16, DType::f32}}) {
    SCOPED_TRACE(dtype_name(pr.act));
    const std::size_t ckpt_bytes = std::size_t(B) * T * cfg.n_embd * dtype_size(pr.act);
    for (auto ck : {ActivationCheckpointing::per_block, ActivationCheckpointing::off}) {
      const auto on_device = Gpt::buffers(cfg, {B, T}, pr, ck, MemoryKind::device);
      const auto on_host = Gpt::buffers(cfg, {B, T}, pr, ck, MemoryKind::pinned_host);
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
}

}  // namespace
}  // namespace tz
