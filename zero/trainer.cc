// The training loop every rank runs: micro-steps, the engine's step, metrics, validation, export.
#include "zero/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "core/metrics.h"
#include "model/byte_tokenizer.h"
#include "model/corpus.h"
#include "model/data_loader.h"
#include "model/gpt_init.h"
#include "model/safetensors.h"
#include "model/token_file.h"
#include "zero/engine.h"

namespace tz {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

std::vector<std::uint16_t> default_corpus_tokens() {
  std::string text;
  for (const std::string& f : default_corpus_files()) {
    std::ifstream in(f, std::ios::binary);
    TZ_CHECK(in, "cannot read the default corpus file ", f);
    text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    text.push_back('\n');
  }
  return encode_bytes(text);
}

struct Corpus {
  std::vector<std::uint16_t> train, val;
  std::string train_name, val_name;
};

Corpus load_corpus(const TrainOptions& opt) {
  Corpus c;
  if (opt.data == kDefaultData) {
    std::vector<std::uint16_t> all = default_corpus_tokens();
    std::size_t n_val = all.size() / 10;  // the last 10% validates
    c.train.assign(all.begin(), all.end() - std::ptrdiff_t(n_val));
    c.train_name = "default corpus (/usr/share/common-licenses), first 90%";
    if (opt.val_data.empty()) {
      c.val.assign(all.end() - std::ptrdiff_t(n_val), all.end());
      c.val_name = "default corpus (/usr/share/common-licenses), last 10%";
    }
  } else {
    c.train = read_token_file(opt.data);
    c.train_name = opt.data;
  }
  if (!opt.val_data.empty()) {
    c.val = read_token_file(opt.val_data);
    c.val_name = opt.val_data;
  }
  return c;
}

}  // namespace

namespace {

nlohmann::json comm_delta(const CommStats& now, const CommStats& before) {
  nlohmann::json j;
  for (int c = 0; c < kNumCollectives; ++c) {
    double el = now.elements_sent[c] - before.elements_sent[c];
    int calls = now.calls[c] - before.calls[c];
    if (calls == 0) continue;
    j[collective_name(Collective(c))] = {{"elements_sent", el},
                                         {"bytes_sent", now.bytes_sent[c] - before.bytes_sent[c]},
                                         {"wait_ms", 1000.0 * (now.wait_seconds[c] - before.wait_seconds[c])},
                                         {"calls", calls}};
  }
  return j;
}

double total_wait_ms(const CommStats& now, const CommStats& before) {
  double s = 0;
  for (int c = 0; c < kNumCollectives; ++c) s += now.wait_seconds[c] - before.wait_seconds[c];
  return 1000.0 * s;
}

float mean_over_ranks(Communicator& comm, float x) {
  if (comm.size() == 1) return x;
  comm.all_reduce(&x, 1, DType::f32)->wait();
  return x / float(comm.size());
}

}  // namespace

TrainResult train(const TrainOptions& opt, Communicator& comm, const LogFn& log_fn,
                  const std::function<void(int, Engine&)>& before_step) {
  const bool root = comm.rank() == 0;
  auto log = [&](const std::string& s) {
    if (!root) return;
    if (log_fn)
      log_fn(s);
    else
      std::printf("%s\n", s.c_str()), std::fflush(stdout);
  };
  TZ_CHECK(opt.steps >= 1, "--steps must be at least 1, got ", opt.steps);
  TZ_CHECK(opt.micro_batch >= 1, "--micro-batch must be at least 1, got ", opt.micro_batch);
  TZ_CHECK(opt.grad_accum >= 1, "--grad-accum must be at least 1, got ", opt.grad_accum);
  const int world = comm.size();
  if (opt.train_batch_size > 0)
    TZ_CHECK(opt.train_batch_size == opt.micro_batch * opt.grad_accum * world, "train_batch_size ",
             opt.train_batch_size, " must equal train_micro_batch_size_per_gpu (", opt.micro_batch,
             ") x gradient_accumulation_steps (", opt.grad_accum, ") x world size (", world, ") = ",
             opt.micro_batch * opt.grad_accum * world);
  GptConfig cfg = opt.model;
  ParamLayout layout = ParamLayout::build(cfg);

  std::vector<std::vector<float>> init;
  if (!opt.init_from.empty())
    load_gpt_safetensors(opt.init_from, layout, init);
  else
    init_gpt_params(cfg, layout, opt.seed, init);

  Corpus corpus = load_corpus(opt);
  DataLoader train_loader(std::move(corpus.train), opt.micro_batch, opt.seq_len, comm.rank(), world, opt.seed,
                          opt.shuffle, cfg.vocab_size, corpus.train_name);
  std::unique_ptr<DataLoader> val_loader;
  if (!corpus.val.empty())
    val_loader = std::make_unique<DataLoader>(std::move(corpus.val), opt.micro_batch, opt.seq_len, comm.rank(), world,
                                              opt.seed, false, cfg.vocab_size, corpus.val_name);

  auto dev = make_device(opt.device, opt.device_mem);
  LrConfig lr = opt.lr;
  lr.total_steps = opt.steps;
  auto host = make_cpu_device(opt.offload.host_mem, "host");
  Engine engine(*dev, *host, comm, layout, opt.dtype, init, opt.adam, lr, opt.zero, opt.fp16, opt.grad_accum,
                opt.offload);
  init.clear();
  init.shrink_to_fit();
  TZ_CHECK(opt.offload.activations != Tier::nvme, "activation checkpoints can be offloaded to cpu, not nvme");
  Gpt model(*dev, cfg, GptShape{opt.micro_batch, opt.seq_len}, opt.dtype, opt.checkpointing,
            opt.offload.activations == Tier::host ? host.get() : nullptr);

  char line[640];
  std::snprintf(line, sizeof line,
                "model %s: %d layers, %d heads, %d embd, vocab %d (padded %d), %.2fM params | %s | %d rank%s, ZeRO "
                "stage %d | micro-batch %d x seq %d x accum %d | per rank on %s: params+grads+optimizer %s, "
                "buckets+gathers %s, activations %s, budget %s; host tier: offloaded states %s, budget %s",
                opt.model_name.c_str(), cfg.n_layer, cfg.n_head, cfg.n_embd, cfg.vocab_size, cfg.padded_vocab_size,
                cfg.num_parameters_unpadded() / 1e6, std::string(dtype_name(opt.dtype)).c_str(), world,
                world == 1 ? "" : "s", opt.zero.stage, opt.micro_batch, opt.seq_len, opt.grad_accum,
                device_kind_name(opt.device).c_str(), format_bytes(engine.persistent_bytes()).c_str(),
                format_bytes(engine.transient_bytes()).c_str(), format_bytes(model.activation_bytes()).c_str(),
                format_bytes(opt.device_mem).c_str(), format_bytes(engine.host_persistent_bytes()).c_str(),
                format_bytes(opt.offload.host_mem).c_str());
  log(line);

  // The memory plan: every buffer by state class and tier, as allocated before step 1.
  std::vector<PlanRow> plan = engine.plan();
  plan.push_back({"activations and scratch", Tier::device, model.activation_bytes()});
  if (model.offloaded_checkpoint_bytes())
    plan.push_back({"activation checkpoints", Tier::host, model.offloaded_checkpoint_bytes()});
  std::size_t plan_total[3] = {0, 0, 0};
  for (const PlanRow& r : plan) plan_total[int(r.tier)] += r.bytes;
  {
    std::string t = "memory plan (per rank):\n";
    for (const PlanRow& r : plan) {
      char b[160];
      std::snprintf(b, sizeof b, "  %-40s %-6s %12s\n", r.what.c_str(), tier_name(r.tier).c_str(),
                    format_bytes(r.bytes).c_str());
      t += b;
    }
    const std::size_t budgets[3] = {opt.device_mem, opt.offload.host_mem, opt.offload.nvme_mem};
    for (int i = 0; i < 3; ++i) {
      char b[160];
      std::snprintf(b, sizeof b, "  %-40s %-6s %12s of %s\n", "total", tier_name(Tier(i)).c_str(),
                    format_bytes(plan_total[i]).c_str(), format_bytes(budgets[i]).c_str());
      t += b;
    }
    t.pop_back();
    log(t);
  }

  MetricsWriter metrics(root ? opt.metrics : std::string());
  const std::size_t BT = std::size_t(opt.micro_batch) * opt.seq_len;
  std::vector<std::int32_t> inputs(BT), targets(BT);
  TrainResult result;

  auto validate = [&](int step) {
    if (!val_loader) return;
    val_loader->reset();
    double sum = 0;
    int n = std::max(1, std::min<int>(opt.val_batches, int(val_loader->batches_per_epoch())));
    for (int i = 0; i < n; ++i) {
      val_loader->next_batch(inputs.data(), targets.data());
      engine.begin_micro_step(false);
      sum += model.forward(engine, inputs.data(), targets.data(), 1.0f);
    }
    result.val_loss = mean_over_ranks(comm, float(sum / n));
    char b[128];
    std::snprintf(b, sizeof b, "step %d | val loss %.4f (%d batches x %d rank%s)", step, result.val_loss, n, world,
                  world == 1 ? "" : "s");
    log(b);
    nlohmann::json rec = {{"step", step}, {"val_loss", result.val_loss}};
    metrics.write(rec);
    result.metrics.push_back(rec);
  };

  double total_ms = 0;
  for (int step = 1; step <= opt.steps; ++step) {
    CommStats before = comm.stats();
    auto t0 = Clock::now();
    double data_ms = 0, fwd_ms = 0, bwd_ms = 0;
    double loss_sum = 0;
    float dscale = engine.dloss_scale();
    for (int micro = 0; micro < opt.grad_accum; ++micro) {
      auto ta = Clock::now();
      train_loader.next_batch(inputs.data(), targets.data());
      auto tb = Clock::now();
      engine.begin_micro_step(micro == opt.grad_accum - 1);
      float loss = model.forward(engine, inputs.data(), targets.data(), dscale);
      auto tc = Clock::now();
      model.backward(engine);
      engine.end_micro_step();
      if (before_step && micro == opt.grad_accum - 1) before_step(step, engine);
      auto td = Clock::now();
      data_ms += std::chrono::duration<double, std::milli>(tb - ta).count();
      fwd_ms += std::chrono::duration<double, std::milli>(tc - tb).count();
      bwd_ms += std::chrono::duration<double, std::milli>(td - tc).count();
      loss_sum += loss;
    }
    auto t3 = Clock::now();
    StepStats st = engine.step();
    double opt_ms = ms_since(t3);
    float loss = mean_over_ranks(comm, float(loss_sum / opt.grad_accum));
    TZ_CHECK(std::isfinite(loss) || opt.dtype == DType::f16, "the training loss is ", loss, " at step ", step,
             ": training diverged; lower --lr or raise --warmup");
    double step_ms = ms_since(t0);
    total_ms += step_ms;
    result.losses.push_back(loss);
    result.loss_scales.push_back(st.loss_scale);
    if (st.skipped) {
      result.skipped_steps.push_back(step);
      char b[160];
      std::snprintf(b, sizeof b, "step %d skipped on every rank: fp16 gradient overflow at loss scale %g (now %g)", step,
                    st.loss_scale, engine.dloss_scale() * opt.grad_accum);
      log(b);
    }
    CommStats after = comm.stats();
    nlohmann::json offload_rec = nlohmann::json::object();
    if (SwapStats* sw = engine.swap_stats()) {
      // The optimizer's NVMe traffic this step: bytes, rate over the optimizer phase, and how much of
      // the phase Adam spent blocked on it (the rest of the transfer time was hidden behind compute).
      double secs = opt_ms / 1000.0;
      offload_rec["nvme"] = {{"read_bytes", sw->read_bytes},
                             {"write_bytes", sw->write_bytes},
                             {"gbps", secs > 0 ? (sw->read_bytes + sw->write_bytes) / secs / 1e9 : 0.0},
                             {"wait_ms", 1000.0 * sw->wait_seconds},
                             {"hidden_fraction", opt_ms > 0 ? 1.0 - 1000.0 * sw->wait_seconds / opt_ms : 0.0}};
      sw->reset();
    }
    if (SwapStats* pw = engine.param_io_stats()) {
      double secs = step_ms / 1000.0;
      offload_rec["nvme_params"] = {{"read_bytes", pw->read_bytes},
                                    {"write_bytes", pw->write_bytes},
                                    {"gbps", secs > 0 ? (pw->read_bytes + pw->write_bytes) / secs / 1e9 : 0.0},
                                    {"wait_ms", 1000.0 * pw->wait_seconds},
                                    {"hidden_fraction", step_ms > 0 ? 1.0 - 1000.0 * pw->wait_seconds / step_ms : 0.0}};
      pw->reset();
    }
    double wait_ms = total_wait_ms(after, before);
    double tok_s = double(BT) * opt.grad_accum * world / (step_ms / 1000.0);
    if (opt.log_every > 0 && (step % opt.log_every == 0 || step == 1 || step == opt.steps)) {
      char b1[32];
      std::snprintf(b1, sizeof b1, "%.0f", tok_s);
      std::snprintf(line, sizeof line,
                    "step %5d/%d | loss %.4f | lr %.2e | norm %.3f | %8.1f ms (comm wait %.1f) | %s tok/s | mem %s "
                    "(peak %s)",
                    step, opt.steps, loss, st.lr, st.grad_norm, step_ms, wait_ms, b1,
                    format_bytes(dev->memory().used()).c_str(), format_bytes(dev->memory().peak()).c_str());
      if (opt.offload.optimizer != Tier::device || opt.offload.param != Tier::device) {
        // Offloaded runs also show the host tier and the optimizer update, where offload costs show.
        char b2[160];
        std::snprintf(b2, sizeof b2, " | host %s | optimizer %.1f ms", format_bytes(host->memory().used()).c_str(),
                      opt_ms);
        std::strncat(line, b2, sizeof line - std::strlen(line) - 1);
      }
      log(line);
    }
    nlohmann::json rec = {
        {"step", step},
        {"loss", loss},
        {"lr", st.lr},
        {"grad_norm", st.grad_norm},
        {"loss_scale", st.loss_scale},
        {"skipped", st.skipped},
        {"tokens_per_s", tok_s},
        {"ms", {{"data", data_ms}, {"forward", fwd_ms}, {"backward", bwd_ms}, {"optimizer", opt_ms},
                {"comm_wait", wait_ms}, {"step", step_ms}}},
        {"comm", comm_delta(after, before)},
        {"offload", offload_rec},
        {"bytes", {{"device", dev->memory().used()}, {"host", host->memory().used()}, {"nvme", engine.nvme_bytes()}}},
        {"peak_bytes",
         {{"device", dev->memory().peak()}, {"host", host->memory().peak()}, {"nvme", engine.nvme_budget().peak()}}}};
    metrics.write(rec);
    result.metrics.push_back(std::move(rec));
    if (opt.val_every > 0 && step % opt.val_every == 0 && step != opt.steps) validate(step);
  }
  validate(opt.steps);
  result.mean_step_ms = total_ms / opt.steps;
  result.peak_device_bytes = dev->memory().peak();
  result.persistent_bytes = engine.persistent_bytes();
  result.host_persistent_bytes = engine.host_persistent_bytes();
  const std::size_t peaks[3] = {dev->memory().peak(), host->memory().peak(), engine.nvme_budget().peak()};
  std::string cmp = "memory: planned vs measured peak per rank:";
  for (int i = 0; i < 3; ++i) {
    result.plan_bytes[i] = plan_total[i];
    result.peak_bytes[i] = peaks[i];
    cmp += " " + tier_name(Tier(i)) + " " + format_bytes(plan_total[i]) + " / " + format_bytes(peaks[i]);
  }
  log(cmp);
  result.transient_bytes = engine.transient_bytes();

  if (!opt.save_safetensors.empty()) {
    std::vector<std::vector<float>> full;
    for (std::size_t g = 0; g < layout.groups.size(); ++g) full.push_back(engine.gather_master(int(g)));
    if (root) {
      std::vector<const float*> groups;
      for (auto& f : full) groups.push_back(f.data());
      save_gpt_safetensors(opt.save_safetensors, layout, groups, DType::f32);
      log("saved " + opt.save_safetensors);
    }
    if (comm.size() > 1) comm.barrier()->wait();
  }
  return result;
}

}  // namespace tz
