// The single-rank training loop (ZeRO stages extend the engine, not this loop's shape).
#include "zero/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
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

char* fmt(char* buf, std::size_t n, const char* f, double v) {
  std::snprintf(buf, n, f, v);
  return buf;
}

}  // namespace

TrainResult train(const TrainOptions& opt, const std::function<void(const std::string&)>& log_fn) {
  auto log = [&](const std::string& s) {
    if (log_fn)
      log_fn(s);
    else
      std::printf("%s\n", s.c_str()), std::fflush(stdout);
  };
  TZ_CHECK(opt.steps >= 1, "--steps must be at least 1, got ", opt.steps);
  TZ_CHECK(opt.micro_batch >= 1, "--micro-batch must be at least 1, got ", opt.micro_batch);
  GptConfig cfg = opt.model;
  ParamLayout layout = ParamLayout::build(cfg);

  std::vector<std::vector<float>> init;
  if (!opt.init_from.empty())
    load_gpt_safetensors(opt.init_from, layout, init);
  else
    init_gpt_params(cfg, layout, opt.seed, init);

  Corpus corpus = load_corpus(opt);
  DataLoader train_loader(std::move(corpus.train), opt.micro_batch, opt.seq_len, 0, 1, opt.seed, opt.shuffle,
                          cfg.vocab_size, corpus.train_name);
  std::unique_ptr<DataLoader> val_loader;
  if (!corpus.val.empty())
    val_loader = std::make_unique<DataLoader>(std::move(corpus.val), opt.micro_batch, opt.seq_len, 0, 1, opt.seed,
                                              false, cfg.vocab_size, corpus.val_name);

  auto dev = make_device(opt.device, opt.device_mem);
  LrConfig lr = opt.lr;
  lr.total_steps = opt.steps;
  Engine engine(*dev, layout, opt.dtype, init, opt.adam, lr);
  init.clear();
  init.shrink_to_fit();
  Gpt model(*dev, cfg, GptShape{opt.micro_batch, opt.seq_len}, opt.dtype, opt.checkpointing);

  char line[512];
  std::snprintf(line, sizeof line,
                "model %s: %d layers, %d heads, %d embd, vocab %d (padded %d), %.2fM params | %s | micro-batch %d x "
                "seq %d | device %s: params+grads+optimizer %s, activations %s, budget %s",
                opt.model_name.c_str(), cfg.n_layer, cfg.n_head, cfg.n_embd, cfg.vocab_size, cfg.padded_vocab_size,
                cfg.num_parameters_unpadded() / 1e6, std::string(dtype_name(opt.dtype)).c_str(), opt.micro_batch,
                opt.seq_len, device_kind_name(opt.device).c_str(), format_bytes(engine.persistent_bytes()).c_str(),
                format_bytes(model.activation_bytes()).c_str(), format_bytes(opt.device_mem).c_str());
  log(line);

  MetricsWriter metrics(opt.metrics);
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
      sum += model.forward(engine, inputs.data(), targets.data(), 1.0f);
    }
    result.val_loss = float(sum / n);
    char b[128];
    std::snprintf(b, sizeof b, "step %d | val loss %.4f (%d batches)", step, result.val_loss, n);
    log(b);
    metrics.write({{"step", step}, {"val_loss", result.val_loss}});
  };

  double total_ms = 0;
  for (int step = 1; step <= opt.steps; ++step) {
    auto t0 = Clock::now();
    train_loader.next_batch(inputs.data(), targets.data());
    double data_ms = ms_since(t0);
    auto t1 = Clock::now();
    float loss = model.forward(engine, inputs.data(), targets.data(), 1.0f);
    TZ_CHECK(std::isfinite(loss), "the training loss is ", loss, " at step ", step,
             ": training diverged; lower --lr or raise --warmup");
    double fwd_ms = ms_since(t1);
    auto t2 = Clock::now();
    model.backward(engine);
    double bwd_ms = ms_since(t2);
    auto t3 = Clock::now();
    StepStats st = engine.step();
    double opt_ms = ms_since(t3);
    double step_ms = ms_since(t0);
    total_ms += step_ms;
    result.losses.push_back(loss);
    double tok_s = double(BT) / (step_ms / 1000.0);
    if (opt.log_every > 0 && (step % opt.log_every == 0 || step == 1 || step == opt.steps)) {
      char b1[32];
      std::snprintf(line, sizeof line,
                    "step %5d/%d | loss %.4f | lr %.2e | norm %.3f | %8.1f ms | %s tok/s | mem %s (peak %s)", step,
                    opt.steps, loss, st.lr, st.grad_norm, step_ms, fmt(b1, sizeof b1, "%.0f", tok_s),
                    format_bytes(dev->memory().used()).c_str(), format_bytes(dev->memory().peak()).c_str());
      log(line);
    }
    metrics.write({{"step", step},
                   {"loss", loss},
                   {"lr", st.lr},
                   {"grad_norm", st.grad_norm},
                   {"tokens_per_s", tok_s},
                   {"ms", {{"data", data_ms}, {"forward", fwd_ms}, {"backward", bwd_ms}, {"optimizer", opt_ms},
                           {"step", step_ms}}},
                   {"bytes", {{"device", dev->memory().used()}}},
                   {"peak_bytes", {{"device", dev->memory().peak()}}}});
    if (opt.val_every > 0 && step % opt.val_every == 0 && step != opt.steps) validate(step);
  }
  validate(opt.steps);
  result.mean_step_ms = total_ms / opt.steps;
  result.peak_device_bytes = dev->memory().peak();

  if (!opt.save_safetensors.empty()) {
    std::vector<const float*> groups;
    for (std::size_t g = 0; g < layout.groups.size(); ++g) groups.push_back(engine.master(int(g)));
    save_gpt_safetensors(opt.save_safetensors, layout, groups, DType::f32);
    log("saved " + opt.save_safetensors);
  }
  return result;
}

}  // namespace tz
