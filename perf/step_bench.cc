// Step benchmark: warm-up, timed steps (median), FLOP accounting, and the matmul limit measured in
// the same process.
#include "perf/step_bench.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "core/backend.h"
#include "core/cpu_adam.h"
#include "core/error.h"
#include "core/op_profile.h"
#include "core/resident_memory.h"
#include "model/model_family.h"
#include "perf/timing.h"
#include "zero/engine.h"
#include "zero/memory_plan.h"
#include "zero/step_time.h"

namespace tz {
namespace {

using bench::Clock;
using bench::median;

}  // namespace

double measure_matmul_gflops(Device& dev, DType dtype, int M, int N, int K, int reps) {
  Backend& be = dev.backend();
  auto s = dev.create_stream();
  Buffer<float> a32(dev, std::size_t(M) * K, "bench A"), b32(dev, std::size_t(K) * N, "bench B"),
      c(dev, std::size_t(M) * N, "bench C");
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> host(std::max(a32.size(), b32.size()));
  for (auto& x : host) x = u(rng);
  be.copy_async(*s, a32.data(), host.data(), a32.bytes());
  be.copy_async(*s, b32.data(), host.data(), b32.bytes());
  Buffer<std::uint16_t> alp, blp;
  CView A = cview(a32.data()), B = cview(b32.data());
  if (dtype != DType::f32) {
    alp = Buffer<std::uint16_t>(dev, a32.size(), "bench A lp");
    blp = Buffer<std::uint16_t>(dev, b32.size(), "bench B lp");
    be.cast(*s, alp.data(), dtype, a32.data(), DType::f32, a32.size());
    be.cast(*s, blp.data(), dtype, b32.data(), DType::f32, b32.size());
    A = {alp.data(), dtype};
    B = {blp.data(), dtype};
  }
  for (int i = 0; i < 2; ++i) be.gemm(*s, Trans::no, Trans::no, M, N, K, A, B, c.data(), Accumulate::no);
  s->synchronize();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    be.gemm(*s, Trans::no, Trans::no, M, N, K, A, B, c.data(), Accumulate::no);
    s->synchronize();
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return 2.0 * M * N * K / median(t) / 1e9;
}

nlohmann::json run_step_bench(const StepBenchOptions& opt, bool quiet) {
  const ModelConfig& cfg = opt.model;
  const ModelFamily& family = model_family(cfg);
  const int B = opt.micro_batch, T = opt.seq_len, BT = B * T;
  auto dev = make_cpu_device();
  ParamLayout layout = ParamLayout::build(cfg);
  std::vector<std::int32_t> inputs(BT), targets(BT);
  std::mt19937 rng(1234);
  for (int i = 0; i < BT; ++i) {
    inputs[i] = int(rng() % unsigned(cfg.vocab_size));
    targets[i] = int(rng() % unsigned(cfg.vocab_size));
  }
  const double flops = model_flops(cfg, B, T);
  nlohmann::json out;
  out["bench"] = "step";
  out["model"] = opt.model_name;
  out["params"] = cfg.num_parameters_unpadded();
  out["micro_batch"] = B;
  out["seq_len"] = T;
  out["threads"] = omp_get_max_threads();
  // The vector ISA the CPU Adam and the elementwise kernels run (avx512, avx2 or scalar).
  const std::string isa(cpu_adam_isa_name(cpu_adam_isa_choice()));
  out["isa"] = isa;
  out["flops_per_step"] = flops;
  out["flops_formula"] = "tokens x FLOPs per token, " + family.flops_formula();
  if (!quiet)
    std::printf("bench step: %s (%.1fM params), micro-batch %d x seq %d, %d threads (%s), %d warm-up + %d timed steps\n",
                opt.model_name.c_str(), cfg.num_parameters_unpadded() / 1e6, B, T, omp_get_max_threads(), isa.c_str(),
                opt.warmup_steps, opt.steps);
  for (DType dt : opt.dtypes) {
    LrConfig lr;
    lr.lr = 1e-4f;
    lr.total_steps = opt.warmup_steps + opt.steps;
    std::vector<double> fwd, bwd, optim, total, losses;
    double residue_bytes = -1;
    double mix[3] = {0, 0, 0};  // products, attention, the rest: ms over the profiled steps
    {
      // The training path with training's settings for one rank: the plan, the engine and the model.
      auto comm = make_self_comm();
      PlanInputs in;
      in.model = cfg;
      in.shape = ModelShape{B, T};
      in.dtype = dt;
      in.checkpointing = opt.checkpointing;
      const MemoryPlan plan = plan_memory(in);
      const bool residue = opt.residue && reset_resident_peak();
      const double resident_before = residue ? double(resident_status_bytes("VmHWM")) : 0;
      auto stream = dev->create_stream();
      PlannedBuffers planned(*dev, plan.buffers);
      auto init = [&](int g, std::vector<float>& v) { family.init_group(cfg, layout, 1337, g, v); };
      Engine engine(*dev, *stream, *comm, plan, planned, EngineConfig{AdamConfig{}, lr, {}, 1}, init);
      const std::unique_ptr<Model> model =
          family.make(*dev, cfg, ModelShape{B, T}, dt, opt.checkpointing, planned, MemoryKind::device);
      Buffer<double> loss = planned.take<double>(kLossSums), readback = planned.take<double>(kLossReadback);
      // The batch in the planned pinned staging, as training holds it (one set: every step uses it).
      Buffer<std::int32_t> tokens = planned.take<std::int32_t>(kTokenStaging);
      std::copy(inputs.begin(), inputs.end(), tokens.data());
      std::copy(targets.begin(), targets.end(), tokens.data() + BT);
      planned.expect_all_taken();
      dev->backend().memset_async(*stream, loss.data(), 0, sizeof(double));
      for (int s = 0; s < opt.warmup_steps + opt.steps; ++s) {
        auto t0 = Clock::now();
        model->forward(engine, tokens.data(), tokens.data() + BT, engine.dloss_scale(), loss.data(), *stream);
        stream->synchronize();
        auto t1 = Clock::now();
        model->backward(engine, *stream);
        engine.end_micro_step();
        stream->synchronize();
        auto t2 = Clock::now();
        engine.step();
        stream->synchronize();
        auto t3 = Clock::now();
        // The loss of this step's forward, read back outside the timed span (the self-check below).
        dev->backend().copy_async(*stream, readback.data(), loss.data(), sizeof(double));
        dev->backend().memset_async(*stream, loss.data(), 0, sizeof(double));
        stream->synchronize();
        losses.push_back(readback.data()[0] / BT);
        if (s < opt.warmup_steps) continue;
        auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
        fwd.push_back(ms(t0, t1));
        bwd.push_back(ms(t1, t2));
        optim.push_back(ms(t2, t3));
        total.push_back(ms(t0, t3));
      }
      if (opt.mix_steps > 0) {
        // Each backend call timed on its own (the wall clock on the cpu): the split of the step, not its
        // time.
        OpProfile profile(*dev);
        profile.name_gemms(family.gemm_shapes(cfg, ModelShape{B, T}, dt));
        for (int s = 0; s < opt.mix_steps; ++s) {
          dev->set_op_profile(&profile);
          model->forward(engine, tokens.data(), tokens.data() + BT, engine.dloss_scale(), loss.data(),
                         *stream);
          model->backward(engine, *stream);
          stream->synchronize();
          dev->set_op_profile(nullptr);
          profile.collect();
          engine.end_micro_step();
          engine.step();
          dev->backend().memset_async(*stream, loss.data(), 0, sizeof(double));
          stream->synchronize();
        }
        for (const OpRow& row : profile.rows())
          mix[row.name.rfind("attention", 0) == 0 ? 1 : row.flops > 0 ? 0 : 2] += row.ms;
      }
      if (residue)
        residue_bytes = std::max(0.0, double(resident_status_bytes("VmHWM")) - resident_before -
                                          double(plan.total(Tier::device) + plan.total(Tier::host)));
    }
    // The limit: the same backend's matmul on the model's widest GEMM shape (MLP expansion: 4 x width for
    // GPT-2, intermediate_size for the Llama family) and on a large square, in this dtype.
    const int mlp = cfg.ffn_dim > 0 ? cfg.ffn_dim : 4 * cfg.n_embd;
    double mm_model = measure_matmul_gflops(*dev, dt, BT, mlp, cfg.n_embd, 10);
    double mm_square = measure_matmul_gflops(*dev, dt, 2048, 2048, 2048, 5);
    double step_ms = median(total);
    nlohmann::json r;
    r["ms_per_step"] = step_ms;
    r["ms_forward"] = median(fwd);
    r["ms_backward"] = median(bwd);
    r["ms_optimizer"] = median(optim);
    r["tokens_per_s"] = BT / (step_ms / 1000.0);
    r["gflops"] = flops / (step_ms / 1000.0) / 1e9;
    r["matmul_gflops_mlp_shape"] = mm_model;
    r["matmul_gflops_2048"] = mm_square;
    r["fraction_of_matmul_rate"] = r["gflops"].get<double>() / std::max(mm_model, mm_square);
    // Every step trains on the same batch: its loss must be finite and fall from the first step to the
    // last, or the step measured is not training.
    r["losses"] = losses;
    if (residue_bytes >= 0) r["resident_residue_bytes"] = residue_bytes;
    if (const double all = mix[0] + mix[1] + mix[2]; all > 0)
      r["mix"] = {{"matmul", mix[0] / all}, {"attention", mix[1] / all}, {"other", mix[2] / all}};
    r["learns"] = losses.size() >= 2 && std::isfinite(losses.back()) && losses.back() < losses.front();
    out[std::string(dtype_name(dt))] = r;
    if (!quiet)
      std::printf(
          "  %-5s %8.1f ms/step (fwd %.1f, bwd %.1f, adamw %.1f) | %8.0f tok/s | %7.1f GFLOP/s | limit: matmul "
          "%.1f GFLOP/s at [%d x %d x %d], %.1f at 2048^3\n",
          std::string(dtype_name(dt)).c_str(), step_ms, median(fwd), median(bwd), median(optim),
          r["tokens_per_s"].get<double>(), r["gflops"].get<double>(), mm_model, BT, mlp, cfg.n_embd,
          mm_square);
  }
  return out;
}

}  // namespace tz
