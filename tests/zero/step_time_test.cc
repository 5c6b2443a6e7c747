// Tests zero/step_time.h and zero/hardware.h: the model's terms follow the plan (which collectives a
// stage runs, what offload moves), with exact arithmetic on a hand-made machine, and hardware files
// round-trip and are validated.
#include "zero/step_time.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "tests/common/error_message.h"
#include "zero/numa_tier.h"

namespace tz {
namespace {

// Round numbers so the terms can be computed by hand.
Hardware simple() {
  Hardware h;
  h.name = "simple";
  h.ranks_per_node = 4;
  h.step_tflops[0] = h.step_tflops[1] = h.step_tflops[2] = 1;  // 1e12 model FLOP/s per device
  h.peak_tflops[0] = h.peak_tflops[1] = h.peak_tflops[2] = 2;
  h.device_gbs = 100, h.cpu_adam_gbs = 40, h.link_gbs = 10;
  h.nvme_read_gbs = 4, h.nvme_write_gbs = 2;
  h.intra_gbs = 20, h.inter_gbs = 5, h.latency_us = 0;
  return h;
}

PlanInputs tiny(int stage, int world) {
  PlanInputs in;
  in.model = model_preset("tiny");
  in.shape = ModelShape{4, 64};
  in.zero.stage = stage;
  in.zero.param_persistence_threshold = 0;
  in.world = world;
  return in;
}

const StepTerm& term(const StepPrediction& p, const std::string& what) {
  for (const auto& t : p.terms)
    if (t.what == what) return t;
  throw std::runtime_error("no term " + what);
}

TEST(StepTime, ComputeIsTheModelFlopsOverTheRateAndCheckpointingAddsAForward) {
  PlanInputs in = tiny(0, 1);
  const double flops = model_flops(in.model, 4, 64);
  StepPrediction p = predict_step(plan_memory(in), simple(), 3);
  EXPECT_DOUBLE_EQ(term(p, "compute").seconds, 3 * flops / 1e12);
  EXPECT_DOUBLE_EQ(term(p, "communication").seconds, 0.0) << "one rank: nothing to reduce";
  in.checkpointing = ActivationCheckpointing::per_block;
  p = predict_step(plan_memory(in), simple(), 3);
  EXPECT_DOUBLE_EQ(term(p, "compute").seconds, 3 * flops * 4 / 3 / 1e12);
  EXPECT_NEAR(p.mfu * 2e12 * p.step_s, 3 * flops * 4 / 3 / (4.0 / 3), 1e-3 * flops);
}

// A CPU node calibrated on 4 cores: 2 ranks of 1 thread each use half of them, so each computes and
// updates at half its share of the node's rates; 2 threads each (or no thread count) use all of them,
// and more threads than were measured are no faster. A GPU node ignores the thread count.
TEST(StepTime, RanksUsingFewerCoresThanMeasuredGetThatShareOnACpuNode) {
  Hardware h = simple();
  h.device = DeviceKind::cpu;
  h.ranks_per_node = 2;
  h.cores = 4;
  PlanInputs in = tiny(1, 2);
  in.device = DeviceKind::cpu;
  in.offload.optimizer = Tier::host;
  const MemoryPlan plan = plan_memory(in);
  auto at = [&](int threads, const char* what) {
    Hardware x = h;
    x.threads_per_rank = threads;
    return term(predict_step(plan, x, 1), what).seconds;
  };
  const double flops = model_flops(in.model, 4, 64);
  EXPECT_DOUBLE_EQ(at(0, "compute"), flops / (1e12 / 2));
  EXPECT_DOUBLE_EQ(at(2, "compute"), flops / (1e12 / 2));
  EXPECT_DOUBLE_EQ(at(1, "compute"), flops / (1e12 / 4));
  EXPECT_DOUBLE_EQ(at(8, "compute"), flops / (1e12 / 2));
  EXPECT_DOUBLE_EQ(at(1, "optimizer"), 2 * at(2, "optimizer"));
  h.cores = 0;  // unknown: the node's rates
  EXPECT_DOUBLE_EQ(at(1, "compute"), flops / (1e12 / 2));
  Hardware gpu = simple();
  gpu.cores = 4, gpu.threads_per_rank = 1;
  EXPECT_DOUBLE_EQ(term(predict_step(plan_memory(tiny(1, 2)), gpu, 1), "compute").seconds, flops / 1e12);
}

// The same node calibrated as 4 ranks of 1 thread (the node's 1 TFLOP/s: 0.25 a rank) and as one rank alone
// on its 4 cores (solo 0.5 TFLOP/s, not the node's 1: its products do not scale to 4 threads). A rank of 4
// threads gets the solo rate; of 2, halfway in log2 (0.375); of 1, the calibrated rank's; 2 ranks of 2
// threads each get 0.375 (their even share is 2 cores); more threads than its share add nothing.
TEST(StepTime, ARanksRateAtMoreThreadsThanCalibratedFollowsTheSoloRate) {
  Hardware h = simple();
  h.device = DeviceKind::cpu;
  h.cores = 4;
  h.calibrated_threads = 1;
  h.solo_step_tflops[0] = 0.5;
  const double flops = model_flops(tiny(0, 1).model, 4, 64);
  auto rate = [&](int world, int threads) {
    PlanInputs in = tiny(0, world);
    in.device = DeviceKind::cpu;
    Hardware x = h;
    x.ranks_per_node = world;
    x.threads_per_rank = threads;
    return flops / term(predict_step(plan_memory(in), x, 1), "compute").seconds / 1e12;
  };
  EXPECT_DOUBLE_EQ(rate(1, 4), 0.5);
  EXPECT_DOUBLE_EQ(rate(1, 2), 0.375);
  EXPECT_DOUBLE_EQ(rate(1, 1), 0.25);
  EXPECT_DOUBLE_EQ(rate(1, 0), 0.5) << "no thread count: the rank's even share, all 4 cores";
  EXPECT_DOUBLE_EQ(rate(2, 2), 0.375);
  EXPECT_DOUBLE_EQ(rate(2, 8), 0.375);
  EXPECT_DOUBLE_EQ(rate(4, 1), 0.25);
  EXPECT_DOUBLE_EQ(rate(1, 16), 0.5);
  h.solo_step_tflops[0] = 0;  // not measured: the node's rate in proportion to the cores, as before
  EXPECT_DOUBLE_EQ(rate(1, 2), 0.5);
  EXPECT_DOUBLE_EQ(rate(1, 4), 1.0);
  // The file keeps both, and older files without them load.
  h.solo_step_tflops[1] = 0.7;
  const Hardware back = Hardware::from_json(h.to_json(), "x");
  EXPECT_EQ(back.calibrated_threads, 1);
  EXPECT_DOUBLE_EQ(back.solo_step_tflops[1], 0.7);
  nlohmann::json old = h.to_json();
  old.erase("solo_step_tflops");
  old.erase("calibrated_threads");
  EXPECT_EQ(Hardware::from_json(old, "x").calibrated_threads, 0);
  old["calibrated_threads"] = 1.5;
  EXPECT_THROW(Hardware::from_json(old, "x"), Error);
}

TEST(StepTime, HardwareFilesKeepTheCoresTheirRatesWereMeasuredOn) {
  Hardware h = simple();
  h.cores = 6;
  EXPECT_EQ(Hardware::from_json(h.to_json(), "x").cores, 6);
  nlohmann::json old = h.to_json();
  old.erase("cores");
  EXPECT_EQ(Hardware::from_json(old, "x").cores, 0) << "files written before issue 19 have none";
  old["cores"] = 2.5;
  EXPECT_THROW(Hardware::from_json(old, "x"), Error);
}

// Stage 0 all-reduces the whole padded gradient once per step: 2 (n-1)/n of its bytes on the bus.
TEST(StepTime, StageZeroAllReducesTheGradientOncePerStep) {
  const MemoryPlan plan = plan_memory(tiny(0, 4));
  const StepPrediction p = predict_step(plan, simple(), 2);
  double elems = 0;
  for (int l = 0; l < plan.buckets.launches(); ++l) elems += double(plan.buckets.stride[l]);
  EXPECT_NEAR(term(p, "communication").seconds, 2.0 * 3 / 4 * elems * 4 / 20e9, 1e-12);
}

// Stage 2 reduce-scatters every micro-step; stage 3 also gathers every sharded group twice per
// micro-step. So communication grows with accumulation at stages 2-3 and not at 1.
TEST(StepTime, ShardedGradientsReduceEveryMicroStepAndStageThreeGathersTwice) {
  const Hardware h = simple();
  auto comm = [&](int stage, int accum) {
    return term(predict_step(plan_memory(tiny(stage, 4)), h, accum), "communication").seconds;
  };
  const MemoryPlan p1 = plan_memory(tiny(1, 4));
  double regather = 0;
  for (int g = 0; g < p1.map.groups(); ++g) regather += 3.0 / 4 * double(p1.map.group(g).padded) * 4 / 20e9;
  EXPECT_NEAR(comm(1, 4) - comm(1, 1), 0.0, 1e-15);
  EXPECT_NEAR(comm(2, 4), comm(2, 1) + 3 * (comm(2, 1) - regather), 1e-12);
  const MemoryPlan p3 = plan_memory(tiny(3, 4));
  double gathers = 0;
  for (int g = 0; g < p3.map.groups(); ++g) gathers += 2 * 3.0 / 4 * double(p3.map.group(g).padded) * 4 / 20e9;
  EXPECT_NEAR(comm(3, 1) - (comm(2, 1) - regather), gathers, 1e-12);
}

TEST(StepTime, BeyondOneNodeTheSlowerNetworkSetsTheBusRate) {
  const Hardware h = simple();  // 4 ranks per node
  auto allreduce_elems = [](const MemoryPlan& p) {
    double e = 0;
    for (int l = 0; l < p.buckets.launches(); ++l) e += double(p.buckets.stride[l]);
    return e;
  };
  const MemoryPlan four = plan_memory(tiny(0, 4)), eight = plan_memory(tiny(0, 8));
  EXPECT_EQ(predict_step(four, h, 1).nodes, 1);
  EXPECT_EQ(predict_step(eight, h, 1).nodes, 2);
  // 2 (n-1)/n of the bytes, at the NVLink-like 20 GB/s in one node and the network's 5 GB/s across two.
  EXPECT_NEAR(term(predict_step(four, h, 1), "communication").seconds, 2 * 3.0 / 4 * allreduce_elems(four) * 4 / 20e9, 1e-12);
  EXPECT_NEAR(term(predict_step(eight, h, 1), "communication").seconds, 2 * 7.0 / 8 * allreduce_elems(eight) * 4 / 5e9, 1e-12);
}

// Issue 33's terms. Each collective at its own calibrated rate (0: the all-reduce bus), capped by the
// network across nodes.
TEST(StepTime, EachCollectiveRunsAtItsOwnCalibratedRate) {
  Hardware h = simple();
  h.reduce_scatter_gbs = 10, h.all_gather_gbs = 40, h.all_reduce_gbs = 30;
  const MemoryPlan p0 = plan_memory(tiny(0, 4)), p3 = plan_memory(tiny(3, 4));
  double ar = 0, rs = 0, ag = 0;
  for (int l = 0; l < p0.buckets.launches(); ++l) ar += 2 * 3.0 / 4 * double(p0.buckets.stride[l]) * 4 / 30e9;
  for (int l = 0; l < p3.buckets.launches(); ++l) rs += 3.0 / 4 * double(p3.buckets.stride[l]) * 4 * 4 / 10e9;
  for (int g = 0; g < p3.map.groups(); ++g) ag += 2 * 3.0 / 4 * double(p3.map.group(g).padded) * 4 / 40e9;
  EXPECT_NEAR(term(predict_step(p0, h, 1), "communication").seconds, ar, 1e-12);
  EXPECT_NEAR(term(predict_step(p3, h, 1), "communication").seconds, rs + ag, 1e-12);
  const MemoryPlan eight = plan_memory(tiny(0, 8));  // two nodes: no faster than inter_gbs (5)
  double ar8 = 0;
  for (int l = 0; l < eight.buckets.launches(); ++l) ar8 += 2 * 7.0 / 8 * double(eight.buckets.stride[l]) * 4 / 5e9;
  EXPECT_NEAR(term(predict_step(eight, h, 1), "communication").seconds, ar8, 1e-12);
}

// Every collective waited on costs sync_us: at stage 3 with 2 micro-steps, each micro-step's reductions
// and its 2 gathers per sharded group, and the 3 scalars; one rank waits on none.
TEST(StepTime, EachWaitedCollectiveCostsTheCalibratedSynchronisation) {
  Hardware h = simple();
  h.sync_us = 100;
  const MemoryPlan p3 = plan_memory(tiny(3, 4));
  int sharded = 0;
  for (int g = 0; g < p3.map.groups(); ++g) sharded += p3.placement.groups[g].params_sharded ? 1 : 0;
  ASSERT_GT(sharded, 0);
  const int waited = p3.buckets.launches() * 2 + 2 * sharded * 2 + 3;
  EXPECT_NEAR(term(predict_step(p3, h, 2), "synchronisation").exposed, waited * 100e-6, 1e-12);
  EXPECT_EQ(term(predict_step(plan_memory(tiny(3, 1)), h, 2), "synchronisation").seconds, 0.0);
  h.sync_us = 0;  // not measured: no term
  EXPECT_EQ(term(predict_step(p3, h, 2), "synchronisation").seconds, 0.0);
}

// The ranks' drift costs sync_fraction of the step's compute however many collectives divide it: stage 3
// (a wait after every sharded group's gathers) and stage 1 (a few) pay the same on top of sync_us each; one
// rank pays none. The file keeps the fraction, files without it load as 0, and one outside [0, 1] is refused.
TEST(StepTime, TheRanksDriftCostsTheCalibratedFractionOfTheCompute) {
  Hardware h = simple();
  h.sync_us = 100;
  h.sync_fraction = 0.05;
  for (int stage : {1, 3}) {
    const StepPrediction s = predict_step(plan_memory(tiny(stage, 4)), h, 2);
    const StepTerm& sync = term(s, "synchronisation");
    const int waited = std::stoi(sync.detail);  // "N collectives waited on, ..."
    ASSERT_GT(term(s, "compute").seconds, 0.0);
    EXPECT_NEAR(sync.exposed, waited * 100e-6 + 0.05 * term(s, "compute").seconds, 1e-12) << "stage " << stage;
  }
  EXPECT_EQ(term(predict_step(plan_memory(tiny(3, 1)), h, 2), "synchronisation").seconds, 0.0);
  EXPECT_DOUBLE_EQ(Hardware::from_json(h.to_json(), "x").sync_fraction, 0.05);
  nlohmann::json old = h.to_json();
  old.erase("sync_fraction");
  EXPECT_EQ(Hardware::from_json(old, "x").sync_fraction, 0.0);
  for (double bad : {-0.1, 1.5}) {
    old["sync_fraction"] = bad;
    EXPECT_THROW(Hardware::from_json(old, "x"), Error) << bad;
  }
}

// On a CPU node the reductions in flight during backward hide comm_overlap of what a GPU would hide; a
// negative figure (the progress threads' contention) exposes more than the communication itself.
TEST(StepTime, OnACpuNodeTheCalibratedOverlapScalesWhatIsHidden) {
  Hardware h = simple();
  Hardware gpu = h;  // a CPU node's 4 ranks share its rate: the same compute per rank on this GPU
  for (double& r : gpu.step_tflops) r /= 4;
  PlanInputs in = tiny(2, 4);
  in.zero.reduce_bucket_size = 20000;  // several launches: all but the last can hide
  const MemoryPlan plan = plan_memory(in);
  ASSERT_GT(plan.buckets.launches(), 1);
  const double gpu_exposed = term(predict_step(plan, gpu, 1), "communication").exposed;
  const double all = term(predict_step(plan, gpu, 1), "communication").seconds;
  ASSERT_LT(gpu_exposed, all) << "the test needs something hidden on a GPU";
  PlanInputs cpu_in = in;
  cpu_in.device = DeviceKind::cpu;
  const MemoryPlan cpu = plan_memory(cpu_in);
  h.device = DeviceKind::cpu;
  auto exposed = [&](double overlap) {
    Hardware x = h;
    x.comm_overlap = overlap;
    return term(predict_step(cpu, x, 1), "communication").exposed;
  };
  EXPECT_DOUBLE_EQ(exposed(0), all);  // not measured: nothing hidden, as before
  EXPECT_NEAR(exposed(1), gpu_exposed, 1e-15);
  EXPECT_NEAR(exposed(0.5), all - 0.5 * (all - gpu_exposed), 1e-15);
  EXPECT_NEAR(exposed(-0.5), all + 0.5 * (all - gpu_exposed), 1e-15);
}

TEST(StepTime, OffloadAddsTheCpuAdamTheLinkAndNvmeTraffic) {
  Hardware h = simple();
  PlanInputs in = tiny(2, 4);
  in.offload.optimizer = Tier::host;
  const MemoryPlan plan = plan_memory(in);
  const StepPrediction p = predict_step(plan, h, 1);
  double opt = 0;
  for (const auto& g : plan.placement.groups) opt += double(g.opt_range.count);
  EXPECT_NEAR(term(p, "optimizer").seconds, opt * (28 + 4) / (40e9 / 4), 1e-12);  // the node's rate over 4 ranks
  EXPECT_GT(term(p, "host <-> device").seconds, 0);
  in.offload.optimizer = Tier::nvme;
  in.offload.nvme_paths = {"/nowhere"};
  const StepPrediction q = predict_step(plan_memory(in), h, 1);
  const double io = opt * 12 / (4e9 / 4) + opt * 12 / (2e9 / 4);
  EXPECT_NEAR(term(q, "optimizer").seconds, std::max(io, opt * 32 / (40e9 / 4)), 1e-12);
  h.nvme_read_gbs = 0;
  EXPECT_THROW(predict_step(plan_memory(in), h, 1), Error) << "no NVMe rate: no prediction";
}

// With a rate calibrated on the states' own path (nvme_states_gbs: read and written, the node's ranks at
// once), the states' traffic goes at it and the sequential rates are not used for them; the file keeps it,
// and a file without it loads as 0 (the sequential rates, as before).
TEST(StepTime, NvmeStatesGoAtTheirCalibratedRateWhenThereIsOne) {
  Hardware h = simple();
  h.nvme_states_gbs = 1;
  PlanInputs in = tiny(2, 4);
  in.offload.optimizer = Tier::nvme;
  in.offload.nvme_paths = {"/nowhere"};
  const MemoryPlan plan = plan_memory(in);
  double opt = 0;
  for (const auto& g : plan.placement.groups) opt += double(g.opt_range.count);
  const double io = 2 * opt * 12 / (1e9 / 4);
  EXPECT_NEAR(term(predict_step(plan, h, 1), "optimizer").seconds, std::max(io, opt * 32 / (40e9 / 4)), 1e-12);
  h.device = DeviceKind::cpu;  // on a CPU the store's thread takes the Adam's cores: the two add
  PlanInputs cpu_in = in;
  cpu_in.device = DeviceKind::cpu;
  EXPECT_NEAR(term(predict_step(plan_memory(cpu_in), h, 1), "optimizer").seconds, io + opt * 32 / (40e9 / 4), 1e-12);
  EXPECT_DOUBLE_EQ(Hardware::from_json(h.to_json(), "x").nvme_states_gbs, 1.0);
  nlohmann::json old = h.to_json();
  old.erase("nvme_states_gbs");
  EXPECT_EQ(Hardware::from_json(old, "x").nvme_states_gbs, 0.0);
  old["nvme_states_gbs"] = -1;
  EXPECT_THROW(Hardware::from_json(old, "x"), Error);
}

// Compressed states on NVMe (issue 36) move their own bytes: each group's master, m and v in their formats.
TEST(StepTime, CompressedNvmeStatesMoveTheirFormatsBytes) {
  Hardware h = simple();
  h.nvme_states_gbs = 1;
  h.cpu_adam_format_time["int8/bf16-sr"] = 3;
  PlanInputs in = tiny(2, 4);
  in.offload.optimizer = Tier::nvme;
  in.offload.nvme_paths = {"/nowhere"};
  in.offload.optimizer_states = MomentFormat::int8;
  in.offload.master_weights = MasterFormat::bf16_sr;
  const MemoryPlan plan = plan_memory(in);
  double bytes = 0, opt = 0;
  for (const CompressedLayout& l : plan.compressed) bytes += double(l.master_bytes() + 2 * l.moment_array_bytes());
  for (const auto& g : plan.placement.groups) opt += double(g.opt_range.count);
  EXPECT_LT(bytes, 0.5 * opt * 12);
  const double io = 2 * bytes / (1e9 / 4);
  EXPECT_NEAR(term(predict_step(plan, h, 1), "optimizer").seconds, std::max(io, 3 * opt * 32 / (40e9 / 4)), 1e-12);
}

// On the device the AdamW moves the formats' bytes: int8 moments and a bf16 master, about a third of fp32's
// 24 state bytes an element, beside the same gradient read and working write.
TEST(StepTime, CompressedStatesOnTheDeviceMoveFewerBytes) {
  const Hardware h = simple();
  PlanInputs in = tiny(2, 4);
  const MemoryPlan plain = plan_memory(in);
  const double fp32 = term(predict_step(plain, h, 1), "optimizer").seconds;
  double opt32 = 0;  // int8 pads the shards to 256-blocks: its ranges differ
  for (const auto& g : plain.placement.groups) opt32 += double(g.opt_range.count);
  in.offload.optimizer_states = MomentFormat::int8;
  in.offload.master_weights = MasterFormat::bf16_sr;
  const MemoryPlan plan = plan_memory(in);
  double opt = 0, states = 0;
  for (const auto& g : plan.placement.groups) opt += double(g.opt_range.count);
  for (const CompressedLayout& l : plan.compressed) states += double(l.master_bytes() + 2 * l.moment_array_bytes());
  const double packed = term(predict_step(plan, h, 1), "optimizer").seconds;
  const double wbytes = double(dtype_size(in.dtype));
  EXPECT_NEAR(packed / fp32, (opt * (4 + wbytes) + 2 * states) / (opt32 * (28 + wbytes)), 1e-9);
  EXPECT_LT(packed, 0.6 * fp32);
}

// With a solo rate (one rank alone on the path) too, a node of one rank moves its states at it, a node of
// the calibrated ranks or more shares the node's rate, and between the two the node's rate is straight
// between them in the ranks. The file keeps the solo rate, and a file without it loads as 0.
TEST(StepTime, OneRankAloneMovesItsNvmeStatesAtTheSoloRate) {
  Hardware h = simple();
  h.cores = 4, h.calibrated_threads = 1;  // calibrated with 4 ranks of one thread
  h.nvme_states_gbs = 3, h.nvme_states_solo_gbs = 1.5;
  auto nvme_s = [&](int world) {
    PlanInputs in = tiny(2, world);
    in.offload.optimizer = Tier::nvme;
    in.offload.nvme_paths = {"/nowhere"};
    const MemoryPlan plan = plan_memory(in);
    double opt = 0;
    for (const auto& g : plan.placement.groups) opt += double(g.opt_range.count);
    const StepPrediction pred = predict_step(plan, h, 1);
    const StepTerm& t = term(pred, "optimizer");
    // "... NVMe states X ms (...": the term's NVMe part, against the bytes it moved
    const std::string d = t.detail;
    const std::size_t at = d.find("NVMe states ") + 12;
    return std::pair{std::stod(d.substr(at)) / 1e3, 2 * opt * 12};
  };
  auto [t1, b1] = nvme_s(1);
  EXPECT_NEAR(t1, b1 / 1.5e9, 1e-5) << "one rank: the solo rate";
  auto [t2, b2] = nvme_s(2);
  EXPECT_NEAR(t2, b2 / ((1.5e9 + (3e9 - 1.5e9) / 3) / 2), 1e-5) << "2 of the 4 calibrated: a third of the way";
  auto [t4, b4] = nvme_s(4);
  EXPECT_NEAR(t4, b4 / (3e9 / 4), 1e-5) << "the calibrated 4: the node's rate shared";
  EXPECT_DOUBLE_EQ(Hardware::from_json(h.to_json(), "x").nvme_states_solo_gbs, 1.5);
  nlohmann::json old = h.to_json();
  old.erase("nvme_states_solo_gbs");
  EXPECT_EQ(Hardware::from_json(old, "x").nvme_states_solo_gbs, 0.0);
}

// States on a numa:N tier: the CPU Adam reads and writes their 12 bytes per element at the node's rates
// (the node's, over its 4 ranks; the slower direction sets the pace) when that is slower than its own stream; with no rates given for the
// node, the host tier's prediction, and the detail says so. Stage 3's parameter fetches from the node go
// at the slower of the link and the node's read rate.
TEST(StepTime, ANumaTierCostsTheNodesRatesWhenTheyAreSlowerThanTheCpuAdam) {
  Hardware h = simple();
  const Tier n1 = numa_tier(1);
  PlanInputs in = tiny(2, 4);
  in.offload.optimizer = Tier::host;
  const StepPrediction host = predict_step(plan_memory(in), h, 1);
  in.offload.optimizer = n1;
  const MemoryPlan plan = plan_memory(in);
  double opt = 0;
  for (const auto& g : plan.placement.groups) opt += double(g.opt_range.count);
  const StepPrediction unknown = predict_step(plan, h, 1);
  EXPECT_DOUBLE_EQ(term(unknown, "optimizer").seconds, term(host, "optimizer").seconds);
  EXPECT_NE(term(unknown, "optimizer").detail.find("numa:1 at the CPU Adam's rate (the hardware gives no rates for node 1)"),
            std::string::npos) << term(unknown, "optimizer").detail;
  h.numa = {{1, 2, 1}};  // 2 GB/s read, 1 written: slower than the Adam's 40
  const StepPrediction slow = predict_step(plan, h, 1);
  EXPECT_NEAR(term(slow, "optimizer").seconds, opt * 12 / (1e9 / 4), 1e-12);  // the slower direction
  EXPECT_NE(term(slow, "optimizer").detail.find("numa:1 read 2, written 1 GB/s"), std::string::npos);
  h.numa = {{1, 400, 400}};  // faster than the Adam's stream: the Adam sets the pace
  EXPECT_DOUBLE_EQ(term(predict_step(plan, h, 1), "optimizer").seconds, term(host, "optimizer").seconds);
  h.numa = {{1, 2, 1}};
  {  // compressed states (issue 36) cross the node's link in their formats' bytes
    PlanInputs c = in;
    c.offload.optimizer_states = MomentFormat::int8, c.offload.master_weights = MasterFormat::bf16_sr;
    const MemoryPlan cp = plan_memory(c);
    double bytes = 0;
    for (const CompressedLayout& l : cp.compressed)
      bytes += double(l.master_bytes() + 2 * l.moment_array_bytes());
    EXPECT_NEAR(term(predict_step(cp, h, 1), "optimizer").seconds, bytes / (1e9 / 4), 1e-12);
  }
  PlanInputs p3 = tiny(3, 4);
  p3.offload.param = Tier::host;
  const double host_fetch = term(predict_step(plan_memory(p3), h, 1), "host <-> device").seconds;
  p3.offload.param = n1;
  const double numa_fetch = term(predict_step(plan_memory(p3), h, 1), "host <-> device").seconds;
  EXPECT_NEAR(numa_fetch, host_fetch * 10 / (2.0 / 4), 1e-9 * host_fetch) << "fetches at 0.5 GB/s, not the link's 10";
}

// Hardware files carry per-node rates as "numa": [{"node", "read_gbs", "write_gbs"}]; bad entries are
// refused naming the field.
TEST(StepTime, HardwareFilesCarryNumaRatesAndRefuseBadOnes) {
  Hardware h = simple();
  h.numa = {{0, 30.5, 20.25}, {2, 5, 4}};
  const Hardware r = Hardware::from_json(h.to_json(), "hw.json");
  EXPECT_EQ(r.numa, h.numa);
  ASSERT_NE(r.numa_rates(2), nullptr);
  EXPECT_EQ(r.numa_rates(2)->write_gbs, 4);
  EXPECT_EQ(r.numa_rates(1), nullptr);
  nlohmann::json j = h.to_json();
  j.erase("numa");
  EXPECT_TRUE(Hardware::from_json(j, "old.json").numa.empty()) << "files from before issue 20 still load";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"node": 0, "read_gbs": 1})", "'write_gbs' is missing"},
      {R"({"node": 0.5, "read_gbs": 1, "write_gbs": 1})", "node 0.5 is not a whole number"},
      {R"({"node": 2000, "read_gbs": 1, "write_gbs": 1})", "'node' must be a number in [0, 1023]"},
      {R"({"node": 0, "read_gbs": 0, "write_gbs": 1})", "needs read_gbs and write_gbs of at least 0.001"},
      {R"({"node": 0, "read_gbs": -1, "write_gbs": 1})", "'read_gbs' must be a number"},
      {R"([1, 2])", "must be {\"node\""},
  };
  for (const auto& [entry, want] : bad) {
    j["numa"] = nlohmann::json::array({nlohmann::json::parse(entry)});
    const std::string m = testing::error_message([&] { Hardware::from_json(j, "hw.json"); });
    EXPECT_NE(m.find("hw.json: "), std::string::npos) << m;
    EXPECT_NE(m.find(want), std::string::npos) << entry << ": " << m;
  }
  j["numa"] = nlohmann::json::array({{{"node", 1}, {"read_gbs", 1}, {"write_gbs", 1}}, {{"node", 1}, {"read_gbs", 2}, {"write_gbs", 2}}});
  EXPECT_NE(testing::error_message([&] { Hardware::from_json(j, "hw.json"); }).find("gives node 1 twice"), std::string::npos);
  j["numa"] = 3;
  EXPECT_NE(testing::error_message([&] { Hardware::from_json(j, "hw.json"); }).find("hardware field 'numa' must be a list"),
            std::string::npos);
}

// The host <-> device term with the optimizer on the host: at stage 1 the reduced gradient stays on the
// device and its optimizer range (the rank's shard) comes down once per step; at stage 2 the reduced shard
// comes down every micro-step. Either way the updated working params go back up.
TEST(StepTime, TheHostOptimizerReadsTheGradientOverTheLinkAtEveryStage) {
  const Hardware h = simple();
  for (int stage : {1, 2}) {
    PlanInputs in = tiny(stage, 4);
    in.offload.optimizer = Tier::host;
    const MemoryPlan plan = plan_memory(in);
    double opt = 0, shard = 0;
    for (int g = 0; g < plan.map.groups(); ++g)
      opt += double(plan.placement.groups[g].opt_range.count), shard += double(plan.map.group(g).shard_count);
    const double down = (stage == 2 ? 3 * shard : opt) * 4, up = opt * 4;  // fp32 working params
    EXPECT_NEAR(term(predict_step(plan, h, 3), "host <-> device").seconds, (down + up) / 10e9, 1e-12) << stage;
  }
}

// The speculative CPU Adam (on a GPU): every covered group's update costs its Adam plus the save of its
// master, m, v and working params (fp32: 16 bytes read and written per element, half again the Adam's
// 32), and hides behind the last micro-step's backward (2/3 of its compute).
TEST(StepTime, TheSpeculativeCpuAdamHidesBehindBackward) {
  Hardware h = simple();
  PlanInputs in = tiny(2, 4);
  in.device = DeviceKind::cuda;
  in.offload.optimizer = Tier::host;
  in.offload.overlap_optimizer_share = 1.0;
  const MemoryPlan plan = plan_memory(in);
  double opt = 0;
  for (const auto& g : plan.placement.groups) opt += double(g.opt_range.count);
  const double adam = opt * (28 + 4) / (40e9 / 4), spec = 2 * adam;
  const double backward = model_flops(in.model, 4, 64) / 1e12 * 2 / 3;
  const StepPrediction p = predict_step(plan, h, 1);
  EXPECT_NEAR(term(p, "optimizer").seconds, spec, 1e-12);
  EXPECT_NEAR(term(p, "optimizer").exposed, std::max(0.0, spec - backward), 1e-12);
  in.offload.overlap_optimizer = OptimizerOverlap::off;
  const StepPrediction q = predict_step(plan_memory(in), h, 1);
  EXPECT_NEAR(term(q, "optimizer").exposed, adam, 1e-12);
  EXPECT_LT(term(p, "optimizer").exposed, term(q, "optimizer").exposed);
}

TEST(StepTime, HardwarePresetsAndFilesRoundTripAndBadFilesAreRefused) {
  for (const auto& n : hardware_preset_names()) {
    const Hardware h = hardware_preset(n);
    EXPECT_FALSE(h.source.empty()) << n;
    const Hardware r = Hardware::from_json(h.to_json(), "test");
    EXPECT_EQ(r.to_json(), h.to_json()) << n;
  }
  EXPECT_THROW(hardware_preset("tpu-v5"), Error);
  nlohmann::json j = hardware_preset("h100-80g").to_json();
  j["link_gbs"] = -1;
  EXPECT_THROW(Hardware::from_json(j, "test"), Error);
  j.erase("link_gbs");
  EXPECT_THROW(Hardware::from_json(j, "test"), Error);
  PlanInputs in = tiny(0, 1);
  in.dtype = DType::bf16;
  EXPECT_THROW(predict_step(plan_memory(in), hardware_preset("v100-32g"), 1), Error) << "no bf16 on a V100";
}

}  // namespace
}  // namespace tz
