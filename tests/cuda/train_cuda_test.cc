// Training on the cuda device (one rank): 20 steps of a small GPT against the same run on the cpu
// backend within a stated tolerance, and the ZeRO contracts on the GPU (stages 0-3, and the optimizer on
// the device, the host tier or NVMe, in fp32 and compressed states) bitwise among themselves. Skips
// without a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "comm/communicator.h"
#include "core/cuda/cuda_runtime.h"
#include "tests/common/test_dir.h"
#include "train/trainer.h"

namespace tz {
namespace {

void quiet(const std::string&) {}

TrainOptions small(DeviceKind device, DType dt, int stage) {
  TrainOptions o;
  o.model = model_preset("tiny");
  o.device = device;
  o.dtype = dt;
  o.steps = 20;
  o.lr.lr = 1e-3f;
  o.log_every = 0;
  o.val_batches = 2;
  o.zero.stage = stage;
  o.zero.reduce_bucket_size = 40'000;
  o.zero.param_persistence_threshold = 0;
  o.attention_math = "fp32";  // the bf16 tensor-core attention has a test of its own
  return o;
}

class CudaTrain : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << cuda::unavailable_reason();
  }
  std::unique_ptr<Communicator> comm_ = make_self_comm();
};

// The GPU's products and reductions add in other orders than oneDNN and the CPU loops (fp32 rounding,
// ~1e-7 relative per operation), which 20 AdamW steps compound: 1e-3 of the loss for fp32, and 1e-2 for
// bf16, whose parameter rounding (2^-8) turns some of those differences into a whole bf16 ulp.
TEST_F(CudaTrain, TwentyStepsGiveTheCpuLossesWithinTolerance) {
  for (DType dt : {DType::f32, DType::bf16}) {
    const TrainResult cpu = train(small(DeviceKind::cpu, dt, 0), *comm_, quiet);
    const TrainResult gpu = train(small(DeviceKind::cuda, dt, 0), *comm_, quiet);
    const double tol = dt == DType::f32 ? 1e-3 : 1e-2;
    ASSERT_EQ(gpu.losses.size(), cpu.losses.size());
    for (std::size_t s = 0; s < cpu.losses.size(); ++s)
      EXPECT_NEAR(gpu.losses[s], cpu.losses[s], tol * cpu.losses[s]) << dtype_name(dt) << " step " << s + 1;
    EXPECT_NEAR(gpu.val_loss, cpu.val_loss, tol * cpu.val_loss) << dtype_name(dt);
    EXPECT_LT(gpu.losses.back(), gpu.losses.front() - 0.3f) << dtype_name(dt);  // and it learns
  }
}

// bf16 attention on tensor cores rounds q, k, v, P and dS to bf16 (~4e-3 each): the losses stay within 3%
// of the cpu's (fp32 attention) and it learns as fast.
TEST_F(CudaTrain, Bf16TensorCoreAttentionStaysCloseToTheCpu) {
  const TrainResult cpu = train(small(DeviceKind::cpu, DType::bf16, 0), *comm_, quiet);
  TrainOptions o = small(DeviceKind::cuda, DType::bf16, 0);
  o.attention_math = "bf16";
  const TrainResult gpu = train(o, *comm_, quiet);
  for (std::size_t s = 0; s < cpu.losses.size(); ++s)
    EXPECT_NEAR(gpu.losses[s], cpu.losses[s], 3e-2 * cpu.losses[s]) << "step " << s + 1;
  EXPECT_LT(gpu.losses.back(), gpu.losses.front() - 0.3f);
}

// At one rank every stage runs the same kernels on the same values (the collectives are copies).
TEST_F(CudaTrain, StagesZeroToThreeGiveBitwiseTheSameLosses) {
  const TrainResult s0 = train(small(DeviceKind::cuda, DType::bf16, 0), *comm_, quiet);
  for (int stage = 1; stage <= 3; ++stage) {
    const TrainResult r = train(small(DeviceKind::cuda, DType::bf16, stage), *comm_, quiet);
    EXPECT_EQ(r.losses, s0.losses) << "stage " << stage;
  }
}

// The GPU's AdamW and the host's CPU Adam are the same arithmetic (core/elementwise.h, no FMA
// contraction), so where the optimizer states live changes no bits, as long as the update does not
// depend on the global norm (whose fp64 partial sums add in another order on the GPU): clipping off.
TEST_F(CudaTrain, TheOptimizerOnTheHostOrNvmeGivesBitwiseTheLossesOfTheDevice) {
  testing::TestDir dir;
  for (int stage : {2, 3}) {
    TrainOptions o = small(DeviceKind::cuda, DType::bf16, stage);
    o.adam.grad_clip = 0;
    const TrainResult device = train(o, *comm_, quiet);
    o.offload.optimizer = Tier::host;
    if (stage == 3) o.offload.param = Tier::host;
    for (OptimizerOverlap overlap : {OptimizerOverlap::off, OptimizerOverlap::on}) {
      o.offload.overlap_optimizer = overlap;
      const TrainResult host = train(o, *comm_, quiet);
      EXPECT_EQ(host.losses, device.losses) << "cpu offload, stage " << stage << ", overlap "
                                            << optimizer_overlap_name(overlap);
    }
    o.offload.optimizer = Tier::nvme;
    if (stage == 3) o.offload.param = Tier::nvme;
    o.offload.nvme_paths = {dir.path()};
    const TrainResult nvme = train(o, *comm_, quiet);
    EXPECT_EQ(nvme.losses, device.losses) << "nvme offload, stage " << stage;
  }
}

// Compressed optimizer states (issue 36): the GPU's adamw_compressed is built to give the CPU Adam's bits
// (codes, absmax, moments, the bf16 master's stochastic rounding), so int8 moments with a bf16-sr master on
// the device train bitwise like the same states on the host tier and on NVMe (clipping off, as above).
TEST_F(CudaTrain, CompressedStatesOnTheGpuGiveBitwiseTheLossesOfTheHostTierAndNvme) {
  testing::TestDir dir;
  for (int stage : {2, 3}) {
    TrainOptions o = small(DeviceKind::cuda, DType::bf16, stage);
    o.adam.grad_clip = 0;
    o.offload.optimizer_states = MomentFormat::int8;
    o.offload.master_weights = MasterFormat::bf16_sr;
    const TrainResult device = train(o, *comm_, quiet);
    o.offload.optimizer = Tier::host;
    if (stage == 3) o.offload.param = Tier::host;
    const TrainResult host = train(o, *comm_, quiet);
    EXPECT_EQ(host.losses, device.losses) << "int8 + bf16-sr, cpu offload, stage " << stage;
    o.offload.optimizer = Tier::nvme;
    if (stage == 3) o.offload.param = Tier::nvme;
    o.offload.nvme_paths = {dir.path()};
    const TrainResult nvme = train(o, *comm_, quiet);
    EXPECT_EQ(nvme.losses, device.losses) << "int8 + bf16-sr, nvme offload, stage " << stage;
  }
}

// Activation checkpoints on the host tier cross PCIe on copy streams of the model's own while the blocks
// compute, ordered by events: the same kernels on the same values as checkpoints on the device, so the
// same bits. 4 layers reuse both buffers of the staging ring; with and without recomputation, over
// accumulated micro-steps and validation.
TEST_F(CudaTrain, ActivationCheckpointsOnTheHostTierGiveBitwiseTheLossesOfTheDevice) {
  for (ActivationCheckpointing ckpt : {ActivationCheckpointing::per_block, ActivationCheckpointing::off}) {
    TrainOptions o = small(DeviceKind::cuda, DType::bf16, 0);
    o.model.n_layer = 4;
    o.grad_accum = 2;
    o.checkpointing = ckpt;
    const TrainResult device = train(o, *comm_, quiet);
    o.offload.activations = Tier::host;
    const TrainResult host = train(o, *comm_, quiet);
    const char* what = ckpt == ActivationCheckpointing::per_block ? "recomputed" : "kept";
    EXPECT_EQ(host.losses, device.losses) << what;
    EXPECT_EQ(host.val_loss, device.val_loss) << what;
  }
}

TEST_F(CudaTrain, ADeviceBudgetTooSmallForTheModelIsRefusedBeforeAnythingRuns) {
  TrainOptions o = small(DeviceKind::cuda, DType::bf16, 0);
  o.device_mem = std::size_t(33) << 20;  // 1 MiB past the cuBLASLt workspace
  try {
    train(o, *comm_, quiet);
    FAIL() << "a 33 MiB device budget was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("device"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tz
