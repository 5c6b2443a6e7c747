// GPT-2 forward/backward: pre-LN blocks (attention, GELU MLP), final LayerNorm, LM head tied to wte.
// Residual adds are fused into the projections (out = residual, then out += x @ W + b), so the
// backward carries one residual-gradient buffer through every block.
#include "model/gpt.h"

#include <algorithm>
#include <cstring>

#include "core/backend.h"
#include "core/error.h"

namespace tz {

struct Gpt::BlockActs {
  Buffer<float> ln1, ln1_mean, ln1_rstd, qkv, atty, att, res2, ln2, ln2_mean, ln2_rstd, fch, fch_gelu;
};

namespace {

constexpr const char* kActs = "activations and scratch";

// One set of block activations' buffer names: "activations <what> [set]".
std::string act_name(const char* what, int set) { return std::string("activations ") + what + " [" + std::to_string(set) + "]"; }

}  // namespace

int Gpt::logits_rows(const ModelConfig& cfg, ModelShape s) { return lm_head_rows(cfg.padded_vocab_size, s); }

std::vector<GemmShape> Gpt::gemm_shapes(const ModelConfig& cfg, ModelShape s) {
  const int BT = s.B * s.T, C = cfg.n_embd, Vp = cfg.padded_vocab_size;
  const Trans N = Trans::no, T = Trans::yes;
  std::vector<GemmShape> v;
  for (int oc : {3 * C, C, 4 * C}) v.push_back({N, N, BT, oc, C});  // qkv, attention and mlp projections...
  v.push_back({N, N, BT, C, 4 * C});                                 // ...and the mlp's back to C
  // The LM head, per chunk of rows (and the last, shorter chunk, whose workspace need may differ).
  const int R = logits_rows(cfg, s);
  std::vector<int> rows{R};
  if (BT % R) rows.push_back(BT % R);
  for (int r : rows) {
    v.push_back({N, T, r, Vp, C});  // logits
    v.push_back({N, N, r, C, Vp});  // its input gradient
    v.push_back({T, N, Vp, C, r});  // its weight gradient
  }
  for (auto [in, out] : {std::pair{C, 3 * C}, {C, C}, {C, 4 * C}, {4 * C, C}}) {
    v.push_back({N, T, BT, in, out});  // input gradient
    v.push_back({T, N, in, out, BT});  // weight gradient
  }
  return v;
}

std::vector<BufferSpec> Gpt::buffers(const ModelConfig& cfg, ModelShape s, DType dt, ActivationCheckpointing ckpt,
                                     MemoryKind ckpt_kind, DeviceKind device) {
  const std::size_t B = s.B, T = s.T, BT = B * T, C = cfg.n_embd, NH = cfg.n_head, Vp = cfg.padded_vocab_size;
  std::vector<BufferSpec> v;
  auto f = [&](std::string name, std::size_t floats) { v.push_back({std::move(name), kActs, MemoryKind::device, floats * 4}); };
  for (int l = 0; l <= cfg.n_layer; ++l)
    v.push_back({ActivationCheckpoints::checkpoint_name(l),
                 ckpt_kind == MemoryKind::device ? kActs : "activation checkpoints", ckpt_kind, BT * C * 4});
  for (int i = 0; i < ActivationCheckpoints::staging_count(ckpt_kind, ckpt); ++i)
    f(ActivationCheckpoints::staging_name(i), BT * C);
  const int sets = ckpt == ActivationCheckpointing::off ? cfg.n_layer : 1;
  for (int i = 0; i < sets; ++i) {
    f(act_name("ln1", i), BT * C);
    f(act_name("ln1 mean", i), BT);
    f(act_name("ln1 rstd", i), BT);
    f(act_name("qkv", i), BT * 3 * C);
    f(act_name("attention output", i), BT * C);
    f(act_name("attention probabilities", i), attention_saved_floats(device, B, NH, T));
    f(act_name("residual after attention", i), BT * C);
    f(act_name("ln2", i), BT * C);
    f(act_name("ln2 mean", i), BT);
    f(act_name("ln2 rstd", i), BT);
    f(act_name("mlp hidden", i), BT * 4 * C);
    f(act_name("mlp gelu", i), BT * 4 * C);
  }
  f("activations final layernorm", BT * C);
  f("activations final layernorm mean", BT);
  f("activations final layernorm rstd", BT);
  f("activations logits", std::size_t(logits_rows(cfg, s)) * Vp);
  f("activations losses", BT);
  f("activations input tokens", BT);  // int32
  f("activations target tokens", BT);
  f("activations residual gradient", BT * C);
  f("activations layernorm gradient", BT * C);
  f("activations attention output gradient", BT * C);
  f("activations qkv gradient", BT * 3 * C);
  f("activations mlp hidden gradient", BT * 4 * C);
  f("activations attention probability gradient", attention_scratch_floats(device, B, NH, T));
  if (dt != DType::f32) {
    v.push_back({"activations low-precision matmul input", kActs, MemoryKind::device, BT * 4 * C * 2});
    v.push_back({"activations low-precision gradient", kActs, MemoryKind::device,
                 std::max<std::size_t>(std::size_t(logits_rows(cfg, s)) * Vp, BT * 4 * C) * 2});
  }
  std::size_t ws = 0;
  for (const GemmShape& g : gemm_shapes(cfg, s)) ws = std::max(ws, gemm_workspace_floats(device, dt, g));
  if (ws) v.push_back({"matmul workspace", "matmul workspace", MemoryKind::device, ws * 4});
  return v;
}

std::vector<int> Gpt::gradient_order(const ParamLayout& layout) { return layout.backward_order(); }

Gpt::Gpt(Device& dev, const ModelConfig& cfg, ModelShape shape, DType dt, ActivationCheckpointing ckpt,
         MemoryKind ckpt_kind)
    : own_(std::make_unique<PlannedBuffers>(dev, buffers(cfg, shape, dt, ckpt, ckpt_kind, dev.kind()))),
      dev_(dev), be_(dev.backend()), cfg_(cfg), layout_(gpt_layout(cfg, &off_)), shape_(shape), dtype_(dt),
      ckpt_(ckpt), ckpt_kind_(ckpt_kind) {
  init(*own_);
  own_->expect_all_taken();
}

Gpt::Gpt(Device& dev, const ModelConfig& cfg, ModelShape shape, DType dt, ActivationCheckpointing ckpt,
         PlannedBuffers& planned, MemoryKind ckpt_kind)
    : dev_(dev), be_(dev.backend()), cfg_(cfg), layout_(gpt_layout(cfg, &off_)), shape_(shape), dtype_(dt),
      ckpt_(ckpt), ckpt_kind_(ckpt_kind) {
  init(planned);
}

void Gpt::init(PlannedBuffers& planned) {
  TZ_CHECK(shape_.B >= 1, "micro-batch must be at least 1, got ", shape_.B);
  TZ_CHECK(shape_.T >= 1 && shape_.T <= cfg_.max_seq_len, "seq-len ", shape_.T, " must be in [1, ", cfg_.max_seq_len,
           "] (the model's position table); raise --seq-len of the model or lower the batch's");
  TZ_CHECK(dtype_ == DType::f32 || dtype_ == DType::bf16 || dtype_ == DType::f16, "unsupported compute dtype ",
           dtype_name(dtype_));
  const std::vector<BufferSpec> specs = buffers(cfg_, shape_, dtype_, ckpt_, ckpt_kind_, dev_.kind());
  act_bytes_ = total_bytes(specs, MemoryKind::device);
  offloaded_ckpt_bytes_ = total_bytes(specs, MemoryKind::pinned_host);
  take_buffers(planned);
}

void Gpt::take_buffers(PlannedBuffers& planned) {
  auto f = [&](const std::string& name) { return planned.take<float>(name); };
  ckpts_ = std::make_unique<ActivationCheckpoints>(dev_, cfg_.n_layer, ckpt_kind_, ckpt_, planned);
  const int sets = ckpt_ == ActivationCheckpointing::off ? cfg_.n_layer : 1;
  acts_.resize(sets);
  for (int i = 0; i < sets; ++i) {
    BlockActs& a = acts_[i];
    a.ln1 = f(act_name("ln1", i));
    a.ln1_mean = f(act_name("ln1 mean", i));
    a.ln1_rstd = f(act_name("ln1 rstd", i));
    a.qkv = f(act_name("qkv", i));
    a.atty = f(act_name("attention output", i));
    a.att = f(act_name("attention probabilities", i));
    a.res2 = f(act_name("residual after attention", i));
    a.ln2 = f(act_name("ln2", i));
    a.ln2_mean = f(act_name("ln2 mean", i));
    a.ln2_rstd = f(act_name("ln2 rstd", i));
    a.fch = f(act_name("mlp hidden", i));
    a.fch_gelu = f(act_name("mlp gelu", i));
  }
  lnf_ = f("activations final layernorm");
  lnf_mean_ = f("activations final layernorm mean");
  lnf_rstd_ = f("activations final layernorm rstd");
  logits_ = f("activations logits");
  losses_ = f("activations losses");
  inputs_ = planned.take<std::int32_t>("activations input tokens");
  targets_ = planned.take<std::int32_t>("activations target tokens");
  dres_ = f("activations residual gradient");
  dln_ = f("activations layernorm gradient");
  datty_ = f("activations attention output gradient");
  dqkv_ = f("activations qkv gradient");
  dfch_ = f("activations mlp hidden gradient");
  datt_ = f("activations attention probability gradient");
  if (dtype_ != DType::f32) {
    lp_act_ = planned.take<std::uint16_t>("activations low-precision matmul input");
    lp_grad_ = planned.take<std::uint16_t>("activations low-precision gradient");
  }
  if (planned.has("matmul workspace")) {
    gemm_workspace_ = planned.take<float>("matmul workspace");
    be_.set_gemm_workspace(gemm_workspace_.data(), gemm_workspace_.size());
  }
}

Gpt::~Gpt() {
  if (!gemm_workspace_.empty()) be_.set_gemm_workspace(nullptr, 0);
}

LmHead Gpt::lm_head(CView x, CView head) {
  return {shape_.B * shape_.T, cfg_.n_embd, cfg_.vocab_size, cfg_.padded_vocab_size, logits_rows(cfg_, shape_), x,
          head, logits_.data(), losses_.data(), targets_.data(), dloss_};
}

CView Gpt::lowp(Stream& s, const float* x, void* scratch, std::size_t n) {
  if (dtype_ == DType::f32) return cview(x);
  be_.cast(s, scratch, dtype_, x, DType::f32, n);
  return {scratch, dtype_};
}

void Gpt::linear_forward(Stream& s, float* out, const float* inp, void* inp_lp, CView w, CView b, int IC, int OC,
                         Accumulate acc) {
  const int BT = shape_.B * shape_.T;
  CView x = lowp(s, inp, inp_lp, std::size_t(BT) * IC);
  be_.gemm(s, Trans::no, Trans::no, BT, OC, IC, x, w, out, acc);
  be_.add_bias(s, out, b, BT, OC);
}

void Gpt::block_forward(Stream& s, int layer, CView p, const float* res_in, BlockActs& a, float* res_out) {
  const int B = shape_.B, T = shape_.T, BT = B * T, C = cfg_.n_embd, NH = cfg_.n_head;
  const BlockOffsets& o = off_.block;
  void* lp = lp_act_.data();
  be_.layernorm_forward(s, a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), res_in, offset(p, o.ln1_w),
                        offset(p, o.ln1_b), BT, C);
  linear_forward(s, a.qkv.data(), a.ln1.data(), lp, offset(p, o.qkv_w), offset(p, o.qkv_b), C, 3 * C, Accumulate::no);
  be_.attention_forward(s, a.atty.data(), a.att.data(), a.qkv.data(), B, T, C, NH);
  be_.cast(s, a.res2.data(), DType::f32, res_in, DType::f32, std::size_t(BT) * C);
  linear_forward(s, a.res2.data(), a.atty.data(), lp, offset(p, o.attproj_w), offset(p, o.attproj_b), C, C,
                 Accumulate::yes);
  be_.layernorm_forward(s, a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.res2.data(), offset(p, o.ln2_w),
                        offset(p, o.ln2_b), BT, C);
  linear_forward(s, a.fch.data(), a.ln2.data(), lp, offset(p, o.fc_w), offset(p, o.fc_b), C, 4 * C, Accumulate::no);
  be_.gelu_forward(s, a.fch_gelu.data(), a.fch.data(), std::size_t(BT) * 4 * C);
  be_.cast(s, res_out, DType::f32, a.res2.data(), DType::f32, std::size_t(BT) * C);
  linear_forward(s, res_out, a.fch_gelu.data(), lp, offset(p, o.fcproj_w), offset(p, o.fcproj_b), 4 * C, C,
                 Accumulate::yes);
}

void Gpt::forward(ParamProvider& params, const std::int32_t* inputs, const std::int32_t* targets,
                  float dloss_scale, double* loss_sum, Stream& s) {
  const int B = shape_.B, T = shape_.T, BT = B * T, C = cfg_.n_embd, V = cfg_.vocab_size;
  for (int i = 0; i < BT; ++i) {
    TZ_CHECK(inputs[i] >= 0 && inputs[i] < V, "input token ", inputs[i], " at position ", i,
             " is outside the vocabulary [0, ", V, ")");
    TZ_CHECK(targets[i] >= 0 && targets[i] < V, "target token ", targets[i], " at position ", i,
             " is outside the vocabulary [0, ", V, ")");
  }
  be_.copy_async(s, inputs_.data(), inputs, sizeof(std::int32_t) * BT);
  be_.copy_async(s, targets_.data(), targets, sizeof(std::int32_t) * BT);

  // The embedding group stays acquired for the whole forward: the LM head reuses wte (tied), and one
  // acquisition per pass keeps ZeRO-3's gather volume at one copy of the parameters.
  const int emb = layout_.embedding_group();
  CView pe = params.acquire(emb, Pass::forward);
  ActivationCheckpoints& ck = *ckpts_;
  be_.encoder_forward(s, ck.write(s, 0), inputs_.data(), offset(pe, off_.wte),
                      offset(pe, off_.wpe), B, T, C);
  ck.written(s, 0);
  for (int l = 0; l < cfg_.n_layer; ++l) {
    int g = layout_.block_group(l);
    CView p = params.acquire(g, Pass::forward);
    BlockActs& a = acts_[ckpt_ == ActivationCheckpointing::off ? l : 0];
    const float* in = ck.reading(l);
    block_forward(s, l, p, in, a, ck.write(s, l + 1));
    ck.written(s, l + 1);
    params.release(g, Pass::forward);
  }
  const int fn = layout_.final_norm_group();
  CView pf = params.acquire(fn, Pass::forward);
  be_.layernorm_forward(s, lnf_.data(), lnf_mean_.data(), lnf_rstd_.data(), ck.reading(cfg_.n_layer),
                        offset(pf, off_.lnf_w), offset(pf, off_.lnf_b), BT, C);
  params.release(fn, Pass::forward);
  // The LM head and the loss, chunk by chunk of rows: each chunk's logits become its gradient in place;
  // the last chunk's stays for backward.
  dloss_ = dloss_scale / float(BT);
  lm_head_forward(be_, s, lm_head(lowp(s, lnf_.data(), lp_act_.data(), std::size_t(BT) * C), offset(pe, off_.wte)));
  params.release(emb, Pass::forward);
  be_.sum(s, loss_sum, losses_.data(), BT);
  ck.finish_forward(s);
}

void Gpt::block_backward(Stream& s, int layer, CView p, float* g, const float* res_in, BlockActs& a, float* dres) {
  const int B = shape_.B, T = shape_.T, BT = B * T, C = cfg_.n_embd, NH = cfg_.n_head;
  const BlockOffsets& o = off_.block;
  const std::size_t nC = std::size_t(BT) * C, n4C = nC * 4, n3C = nC * 3;
  void* lpa = lp_act_.data();
  void* lpg = lp_grad_.data();

  // MLP projection: res_out = res2 + fch_gelu @ Wfcp + b
  CView dy = lowp(s, dres, lpg, nC);
  be_.gemm(s, Trans::no, Trans::yes, BT, 4 * C, C, dy, offset(p, o.fcproj_w), dfch_.data(), Accumulate::no);
  be_.gemm(s, Trans::yes, Trans::no, 4 * C, C, BT, lowp(s, a.fch_gelu.data(), lpa, n4C), dy, g + o.fcproj_w,
           Accumulate::yes);
  be_.bias_backward(s, g + o.fcproj_b, dres, BT, C);
  be_.gelu_backward(s, dfch_.data(), a.fch.data(), dfch_.data(), n4C);
  // MLP expansion: fch = ln2 @ Wfc + b
  dy = lowp(s, dfch_.data(), lpg, n4C);
  be_.gemm(s, Trans::no, Trans::yes, BT, C, 4 * C, dy, offset(p, o.fc_w), dln_.data(), Accumulate::no);
  be_.gemm(s, Trans::yes, Trans::no, C, 4 * C, BT, lowp(s, a.ln2.data(), lpa, nC), dy, g + o.fc_w, Accumulate::yes);
  be_.bias_backward(s, g + o.fc_b, dfch_.data(), BT, 4 * C);
  be_.layernorm_backward(s, dres, g + o.ln2_w, g + o.ln2_b, dln_.data(), a.res2.data(), offset(p, o.ln2_w),
                         a.ln2_mean.data(), a.ln2_rstd.data(), BT, C);
  // Attention projection: res2 = res_in + atty @ Wproj + b
  dy = lowp(s, dres, lpg, nC);
  be_.gemm(s, Trans::no, Trans::yes, BT, C, C, dy, offset(p, o.attproj_w), datty_.data(), Accumulate::no);
  be_.gemm(s, Trans::yes, Trans::no, C, C, BT, lowp(s, a.atty.data(), lpa, nC), dy, g + o.attproj_w, Accumulate::yes);
  be_.bias_backward(s, g + o.attproj_b, dres, BT, C);
  be_.attention_backward(s, dqkv_.data(), datt_.data(), datty_.data(), a.qkv.data(), a.atty.data(), a.att.data(), B, T, C,
                         NH);
  // QKV: qkv = ln1 @ Wqkv + b
  dy = lowp(s, dqkv_.data(), lpg, n3C);
  be_.gemm(s, Trans::no, Trans::yes, BT, C, 3 * C, dy, offset(p, o.qkv_w), dln_.data(), Accumulate::no);
  be_.gemm(s, Trans::yes, Trans::no, C, 3 * C, BT, lowp(s, a.ln1.data(), lpa, nC), dy, g + o.qkv_w, Accumulate::yes);
  be_.bias_backward(s, g + o.qkv_b, dqkv_.data(), BT, 3 * C);
  be_.layernorm_backward(s, dres, g + o.ln1_w, g + o.ln1_b, dln_.data(), res_in, offset(p, o.ln1_w),
                         a.ln1_mean.data(), a.ln1_rstd.data(), BT, C);
}

void Gpt::backward(ParamProvider& params, Stream& s) {
  const int B = shape_.B, T = shape_.T, BT = B * T, C = cfg_.n_embd;
  const std::size_t nC = std::size_t(BT) * C;
  const int emb = layout_.embedding_group(), fn = layout_.final_norm_group();

  // LM head: logits = lnf @ wte^T. The embedding's parameter values are not needed after this
  // (encoder backward only scatters gradients), so it is released at once.
  // Chunks of rows from the last (whose gradient forward left in the logits buffer) to the first
  // (recomputed: the logits again, then their gradient).
  ActivationCheckpoints& ck = *ckpts_;
  ck.start_backward(s);  // on the host tier, the last checkpoints go up while the LM head runs
  CView pe = params.acquire(emb, Pass::backward);
  float* ge = params.grad(emb);
  lm_head_backward(be_, s, lm_head(lowp(s, lnf_.data(), lp_act_.data(), nC), offset(pe, off_.wte)),
                   [&](const float* g, std::size_t n) { return lowp(s, g, lp_grad_.data(), n); }, dln_.data(),
                   ge + off_.wte);
  params.release(emb, Pass::backward);

  CView pf = params.acquire(fn, Pass::backward);
  float* gf = params.grad(fn);
  be_.fill(s, dres_.data(), 0.0f, nC);
  be_.layernorm_backward(s, dres_.data(), gf + off_.lnf_w, gf + off_.lnf_b, dln_.data(),
                         ck.load(s, cfg_.n_layer), offset(pf, off_.lnf_w), lnf_mean_.data(),
                         lnf_rstd_.data(), BT, C);
  ck.done(s, cfg_.n_layer);
  params.release(fn, Pass::backward);
  params.grad_ready(fn);

  for (int l = cfg_.n_layer - 1; l >= 0; --l) {
    int g = layout_.block_group(l);
    CView p = params.acquire(g, Pass::backward);
    BlockActs& a = acts_[ckpt_ == ActivationCheckpointing::off ? l : 0];
    // Recompute this block's activations from its checkpointed input (the output is not needed).
    const float* in = ck.load(s, l);
    if (ckpt_ == ActivationCheckpointing::per_block) block_forward(s, l, p, in, a, ck.recompute_output(l));
    block_backward(s, l, p, params.grad(g), in, a, dres_.data());
    ck.done(s, l);
    params.release(g, Pass::backward);
    params.grad_ready(g);
  }

  be_.encoder_backward(s, ge + off_.wte, ge + off_.wpe, dres_.data(), inputs_.data(), B, T, C);
  params.grad_ready(emb);
}

}  // namespace tz
