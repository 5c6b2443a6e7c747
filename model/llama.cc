// Llama-family forward/backward. Residual adds are fused into the projections as in GPT-2's (out =
// residual, then out += x W^T), so backward carries one residual-gradient buffer through every block.
#include "model/llama.h"

#include <algorithm>

#include "core/backend.h"
#include "core/error.h"
#include "model/rope_table.h"

namespace tz {

// Activations in the run's activation dtype; statistics and the attention's saved rows in fp32.
struct Llama::BlockActs {
  DynBuffer norm1, qkv, atty, res2, norm2, gate_up, hidden;
  Buffer<float> rstd1, att, rstd2;
};

struct Llama::Offsets {
  std::size_t embed = 0, head = 0, final_norm = 0;
  // In every block's group; bias offsets are meaningful only when the config has those biases.
  std::size_t norm1 = 0, wqkv = 0, bqkv = 0, wo = 0, bo = 0, norm2 = 0, wgu = 0, bgu = 0, wd = 0, bd = 0;
};

namespace {

constexpr const char* kActs = "activations and scratch";

std::string set_name(const char* what, int set) {
  return std::string("activations ") + what + " [" + std::to_string(set) + "]";
}

std::size_t offset_of(const ParamLayout& L, const std::string& name) {
  const TensorSpec* t = L.find(name);
  TZ_CHECK(t, "the Llama layout has no tensor ", name);
  return t->offset;
}

}  // namespace

int Llama::logits_rows(const ModelConfig& c, ModelShape s) { return lm_head_rows(c.padded_vocab_size, s); }

std::vector<GemmShape> Llama::gemm_shapes(const ModelConfig& c, ModelShape s, DType act) {
  const LlamaDims d = LlamaDims::of(c);
  const int BT = s.B * s.T, C = d.C, Q = d.H * d.hd, QKV = Q + 2 * d.KV * d.hd, I = d.I, Vp = c.padded_vocab_size;
  const Trans N = Trans::no, T = Trans::yes;
  std::vector<GemmShape> v;
  const struct {
    int in, out;
    const char* name;
  } linears[] = {{C, QKV, "qkv"}, {Q, C, "o"}, {C, 2 * I, "gate_up"}, {I, C, "down"}};
  for (const auto& l : linears) {
    const std::string n = l.name;
    v.push_back({N, T, BT, l.out, l.in, act, n + ".fwd"});
    v.push_back({N, N, BT, l.in, l.out, act, n + ".dgrad"});
    v.push_back({T, N, l.out, l.in, BT, DType::f32, n + ".wgrad"});
  }
  const int R = logits_rows(c, s);
  std::vector<int> rows{R};
  if (BT % R) rows.push_back(BT % R);
  for (int r : rows) {
    v.push_back({N, T, r, Vp, C, act, "lmhead.fwd"});
    v.push_back({N, N, r, C, Vp, act, "lmhead.dgrad"});
    v.push_back({T, N, Vp, C, r, DType::f32, "lmhead.wgrad"});
  }
  return v;
}

std::vector<BufferSpec> Llama::buffers(const ModelConfig& c, ModelShape s, Precision pr, ActivationCheckpointing ckpt,
                                       MemoryKind ckpt_kind, DeviceKind device) {
  const LlamaDims d = LlamaDims::of(c);
  const std::size_t B = s.B, T = s.T, BT = B * T, C = d.C, Q = std::size_t(d.H) * d.hd,
                    QKV = Q + 2 * std::size_t(d.KV) * d.hd, I = d.I, Vp = c.padded_vocab_size;
  const std::size_t rows = logits_rows(c, s), act = dtype_size(pr.act);
  const AttentionShape att{s.B, s.T, d.H, d.KV, d.hd};
  std::vector<BufferSpec> v;
  auto f = [&](std::string name, std::size_t floats) { v.push_back({std::move(name), kActs, MemoryKind::device, floats * 4}); };
  auto a = [&](std::string name, std::size_t n) { v.push_back({std::move(name), kActs, MemoryKind::device, n * act}); };
  for (int l = 0; l <= c.n_layer; ++l)
    v.push_back({ActivationCheckpoints::checkpoint_name(l),
                 ckpt_kind == MemoryKind::device ? kActs : "activation checkpoints", ckpt_kind, BT * C * act});
  for (int i = 0; i < ActivationCheckpoints::staging_count(ckpt_kind, ckpt); ++i)
    a(ActivationCheckpoints::staging_name(i), BT * C);
  const int sets = ckpt == ActivationCheckpointing::off ? c.n_layer : 1;
  for (int i = 0; i < sets; ++i) {
    a(set_name("norm1", i), BT * C);
    f(set_name("norm1 rstd", i), BT);
    a(set_name("qkv", i), BT * QKV);
    a(set_name("attention output", i), BT * Q);
    f(set_name("attention probabilities", i), attention_saved_floats(device, att, pr.act));
    a(set_name("residual after attention", i), BT * C);
    a(set_name("norm2", i), BT * C);
    f(set_name("norm2 rstd", i), BT);
    a(set_name("mlp gate and up", i), BT * 2 * I);
    a(set_name("mlp hidden", i), BT * I);
  }
  a("activations final norm", BT * C);
  f("activations final norm rstd", BT);
  a("activations logits", rows * Vp);
  f("activations losses", BT);
  f("activations input tokens", BT);  // int32
  f("activations target tokens", BT);
  f("activations rope table", 2 * T * (d.hd / 2));
  a("activations residual gradient", BT * C);
  a("activations norm gradient", BT * C);
  a("activations attention output gradient", BT * Q);
  a("activations qkv gradient", BT * QKV);
  a("activations mlp gate and up gradient", BT * 2 * I);
  a("activations mlp hidden gradient", BT * I);
  f("activations attention scratch", attention_scratch_floats(device, att, pr.act));
  if (pr.act != pr.param) {  // fp32 activations of 16-bit parameters: each product's inputs cast first
    v.push_back({"activations low-precision matmul input", kActs, MemoryKind::device, BT * std::max({C, Q, I}) * 2});
    v.push_back({"activations low-precision gradient", kActs, MemoryKind::device,
                 std::max(rows * Vp, BT * std::max({C, QKV, 2 * I})) * 2});
  }
  std::size_t ws = 0;
  for (const GemmShape& g : gemm_shapes(c, s, pr.act)) ws = std::max(ws, gemm_workspace_floats(device, pr.param, g));
  if (ws) v.push_back({"matmul workspace", "matmul workspace", MemoryKind::device, ws * 4});
  return v;
}

Llama::Llama(Device& dev, const ModelConfig& cfg, ModelShape shape, Precision pr, ActivationCheckpointing ckpt,
             MemoryKind ckpt_kind)
    : own_(std::make_unique<PlannedBuffers>(dev, buffers(cfg, shape, pr, ckpt, ckpt_kind, dev.kind()))),
      dev_(dev), be_(dev.backend()), cfg_(cfg), d_(LlamaDims::of(cfg)), layout_(llama_layout(cfg)), shape_(shape),
      dtype_(pr.param), act_(pr.act), ckpt_(ckpt), ckpt_kind_(ckpt_kind) {
  init(*own_);
  own_->expect_all_taken();
}

Llama::Llama(Device& dev, const ModelConfig& cfg, ModelShape shape, Precision pr, ActivationCheckpointing ckpt,
             PlannedBuffers& planned, MemoryKind ckpt_kind)
    : dev_(dev), be_(dev.backend()), cfg_(cfg), d_(LlamaDims::of(cfg)), layout_(llama_layout(cfg)), shape_(shape),
      dtype_(pr.param), act_(pr.act), ckpt_(ckpt), ckpt_kind_(ckpt_kind) {
  init(planned);
}

Llama::~Llama() {
  if (!gemm_workspace_.empty()) be_.set_gemm_workspace(nullptr, 0);
}

void Llama::init(PlannedBuffers& planned) {
  TZ_CHECK(shape_.B >= 1, "micro-batch must be at least 1, got ", shape_.B);
  TZ_CHECK(shape_.T >= 1 && shape_.T <= cfg_.max_seq_len, "seq-len ", shape_.T, " must be in [1, ", cfg_.max_seq_len,
           "] (the model's max_position_embeddings)");
  check_precision({dtype_, act_});
  TZ_CHECK(cfg_.sliding_window == 0 || shape_.T <= cfg_.sliding_window, "seq-len ", shape_.T,
           " is longer than the model's attention window (sliding_window ", cfg_.sliding_window,
           "), which is not built: train with --seq-len ", cfg_.sliding_window, " or less");
  off_ = std::make_unique<Offsets>();
  Offsets& o = *off_;
  o.embed = offset_of(layout_, "model.embed_tokens.weight");
  o.head = cfg_.tied_head ? o.embed : offset_of(layout_, "lm_head.weight");
  o.final_norm = offset_of(layout_, "model.norm.weight");
  const std::string p = "model.layers.0.";
  o.norm1 = offset_of(layout_, p + "input_layernorm.weight");
  o.wqkv = offset_of(layout_, p + "self_attn.q_proj.weight");
  o.wo = offset_of(layout_, p + "self_attn.o_proj.weight");
  o.norm2 = offset_of(layout_, p + "post_attention_layernorm.weight");
  o.wgu = offset_of(layout_, p + "mlp.gate_proj.weight");
  o.wd = offset_of(layout_, p + "mlp.down_proj.weight");
  if (cfg_.qkv_bias) o.bqkv = offset_of(layout_, p + "self_attn.q_proj.bias");
  if (cfg_.o_bias) o.bo = offset_of(layout_, p + "self_attn.o_proj.bias");
  if (cfg_.mlp_bias) o.bgu = offset_of(layout_, p + "mlp.gate_proj.bias"), o.bd = offset_of(layout_, p + "mlp.down_proj.bias");
  const std::size_t C = d_.C, Q = std::size_t(d_.H) * d_.hd, KV = std::size_t(d_.KV) * d_.hd, I = d_.I;
  // The products read q/k/v and gate/up as one matrix each: the layout must keep them back to back.
  TZ_CHECK(offset_of(layout_, p + "self_attn.v_proj.weight") == o.wqkv + (Q + KV) * C &&
               offset_of(layout_, p + "mlp.up_proj.weight") == o.wgu + I * C,
           "the Llama layout must keep q/k/v and gate/up back to back");

  const std::vector<BufferSpec> specs = buffers(cfg_, shape_, {dtype_, act_}, ckpt_, ckpt_kind_, dev_.kind());
  act_bytes_ = total_bytes(specs, MemoryKind::device);
  offloaded_ckpt_bytes_ = total_bytes(specs, MemoryKind::pinned_host);

  auto f = [&](const std::string& name) { return planned.take<float>(name); };
  auto a = [&](const std::string& name) { return planned.take_as(name, act_); };
  ckpts_ = std::make_unique<ActivationCheckpoints>(dev_, cfg_.n_layer, ckpt_kind_, ckpt_, act_, planned);
  const int sets = ckpt_ == ActivationCheckpointing::off ? cfg_.n_layer : 1;
  acts_.resize(sets);
  for (int i = 0; i < sets; ++i) {
    BlockActs& b = acts_[i];
    b.norm1 = a(set_name("norm1", i));
    b.rstd1 = f(set_name("norm1 rstd", i));
    b.qkv = a(set_name("qkv", i));
    b.atty = a(set_name("attention output", i));
    b.att = f(set_name("attention probabilities", i));
    b.res2 = a(set_name("residual after attention", i));
    b.norm2 = a(set_name("norm2", i));
    b.rstd2 = f(set_name("norm2 rstd", i));
    b.gate_up = a(set_name("mlp gate and up", i));
    b.hidden = a(set_name("mlp hidden", i));
  }
  norm_ = a("activations final norm");
  norm_rstd_ = f("activations final norm rstd");
  logits_ = a("activations logits");
  losses_ = f("activations losses");
  inputs_ = planned.take<std::int32_t>("activations input tokens");
  targets_ = planned.take<std::int32_t>("activations target tokens");
  rope_ = f("activations rope table");
  dres_ = a("activations residual gradient");
  dnorm_ = a("activations norm gradient");
  datty_ = a("activations attention output gradient");
  dqkv_ = a("activations qkv gradient");
  dgate_up_ = a("activations mlp gate and up gradient");
  dhidden_ = a("activations mlp hidden gradient");
  datt_ = f("activations attention scratch");
  if (act_ != dtype_) {
    lp_act_ = planned.take<std::uint16_t>("activations low-precision matmul input");
    lp_grad_ = planned.take<std::uint16_t>("activations low-precision gradient");
  }
  if (planned.has("matmul workspace")) {
    gemm_workspace_ = planned.take<float>("matmul workspace");
    be_.set_gemm_workspace(gemm_workspace_.data(), gemm_workspace_.size());
  }
  rope_host_ = rope_table(cfg_, shape_.T);
  TZ_CHECK(rope_host_.size() == rope_.size(), "rope table: ", rope_host_.size(), " floats for a buffer of ",
           rope_.size());
}

LmHead Llama::lm_head(CView x, CView head) {
  return {shape_.B * shape_.T, d_.C, cfg_.vocab_size, cfg_.padded_vocab_size, logits_rows(cfg_, shape_), x, head,
          logits_, losses_.data(), targets_.data(), dloss_};
}

CView Llama::lowp(Stream& s, CView x, void* scratch, std::size_t n) {
  if (x.dtype == dtype_) return x;
  be_.cast(s, scratch, dtype_, x.ptr, x.dtype, n);
  return {scratch, dtype_};
}

void Llama::linear(Stream& s, View out, CView inp, CView w, const CView* b, int IC, int OC, Accumulate acc) {
  const int BT = shape_.B * shape_.T;
  const CView x = lowp(s, inp, lp_act_.data(), std::size_t(BT) * IC);
  be_.gemm(s, Trans::no, Trans::yes, BT, OC, IC, x, w, out, acc);
  if (b) be_.add_bias(s, out, *b, BT, OC);
}

void Llama::linear_backward(Stream& s, View din, Accumulate din_acc, float* dw, float* db, CView dout, CView inp,
                            CView w, int IC, int OC) {
  const int BT = shape_.B * shape_.T;
  const CView dy = lowp(s, dout, lp_grad_.data(), std::size_t(BT) * OC);
  be_.gemm(s, Trans::no, Trans::no, BT, IC, OC, dy, w, din, din_acc);
  be_.gemm(s, Trans::yes, Trans::no, OC, IC, BT, dy, lowp(s, inp, lp_act_.data(), std::size_t(BT) * IC), dw,
           Accumulate::yes);
  if (db) be_.bias_backward(s, db, dout, BT, OC);
}

void Llama::block_forward(Stream& s, CView p, CView res_in, BlockActs& a, View res_out) {
  const int B = shape_.B, T = shape_.T, BT = B * T, C = d_.C, H = d_.H, KV = d_.KV, hd = d_.hd, I = d_.I;
  const int Q = H * hd, QKV = Q + 2 * KV * hd;
  const std::size_t nC = std::size_t(BT) * C;
  const Offsets& o = *off_;
  const float eps = float(cfg_.norm_eps);
  const CView bqkv = offset(p, o.bqkv), bo = offset(p, o.bo), bgu = offset(p, o.bgu), bd = offset(p, o.bd);
  be_.rmsnorm_forward(s, a.norm1, a.rstd1.data(), res_in, offset(p, o.norm1), BT, C, eps);
  linear(s, a.qkv, a.norm1, offset(p, o.wqkv), cfg_.qkv_bias ? &bqkv : nullptr, C, QKV, Accumulate::no);
  be_.rope(s, a.qkv, rope_.data(), BT, T, H, hd, QKV, false);
  be_.rope(s, a.qkv.at(Q), rope_.data(), BT, T, KV, hd, QKV, false);
  be_.attention_forward(s, a.atty, a.att.data(), datt_.data(), a.qkv, AttentionShape{B, T, H, KV, hd});
  be_.copy_async(s, a.res2.data(), res_in.ptr, nC * dtype_size(act_));
  linear(s, a.res2, a.atty, offset(p, o.wo), cfg_.o_bias ? &bo : nullptr, Q, C, Accumulate::yes);
  be_.rmsnorm_forward(s, a.norm2, a.rstd2.data(), a.res2, offset(p, o.norm2), BT, C, eps);
  linear(s, a.gate_up, a.norm2, offset(p, o.wgu), cfg_.mlp_bias ? &bgu : nullptr, C, 2 * I, Accumulate::no);
  be_.swiglu_forward(s, a.hidden, a.gate_up, BT, I);
  be_.copy_async(s, res_out.ptr, a.res2.data(), nC * dtype_size(act_));
  linear(s, res_out, a.hidden, offset(p, o.wd), cfg_.mlp_bias ? &bd : nullptr, I, C, Accumulate::yes);
}

void Llama::forward(ParamProvider& params, const std::int32_t* inputs, const std::int32_t* targets, float dloss_scale,
                    double* loss_sum, Stream& s) {
  const int B = shape_.B, T = shape_.T, BT = B * T, C = d_.C, V = cfg_.vocab_size;
  for (int i = 0; i < BT; ++i) {
    TZ_CHECK(inputs[i] >= 0 && inputs[i] < V, "input token ", inputs[i], " at position ", i,
             " is outside the vocabulary [0, ", V, ")");
    TZ_CHECK(targets[i] >= 0 && targets[i] < V, "target token ", targets[i], " at position ", i,
             " is outside the vocabulary [0, ", V, ")");
  }
  if (!rope_uploaded_) {
    be_.copy_async(s, rope_.data(), rope_host_.data(), rope_host_.size() * sizeof(float));
    rope_uploaded_ = true;  // rope_host_ stays alive (and unchanged) for the copy
  }
  be_.copy_async(s, inputs_.data(), inputs, sizeof(std::int32_t) * BT);
  be_.copy_async(s, targets_.data(), targets, sizeof(std::int32_t) * BT);

  // The embedding group stays acquired for the whole forward: the head (tied or not) lives in it.
  const Offsets& o = *off_;
  const int emb = layout_.embedding_group();
  const CView pe = params.acquire(emb, Pass::forward);
  ActivationCheckpoints& ck = *ckpts_;
  be_.encoder_forward(s, ck.write(s, 0), inputs_.data(), offset(pe, o.embed), CView{nullptr, pe.dtype}, B, T, C);
  ck.written(s, 0);
  for (int l = 0; l < cfg_.n_layer; ++l) {
    const int g = layout_.block_group(l);
    const CView p = params.acquire(g, Pass::forward);
    BlockActs& a = acts_[ckpt_ == ActivationCheckpointing::off ? l : 0];
    block_forward(s, p, ck.reading(l), a, ck.write(s, l + 1));
    ck.written(s, l + 1);
    params.release(g, Pass::forward);
  }
  const int fn = layout_.final_norm_group();
  const CView pf = params.acquire(fn, Pass::forward);
  be_.rmsnorm_forward(s, norm_, norm_rstd_.data(), ck.reading(cfg_.n_layer), offset(pf, o.final_norm), BT, C,
                      float(cfg_.norm_eps));
  params.release(fn, Pass::forward);
  dloss_ = dloss_scale / float(BT);
  lm_head_forward(be_, s, lm_head(lowp(s, norm_, lp_act_.data(), std::size_t(BT) * C), offset(pe, o.head)));
  params.release(emb, Pass::forward);
  be_.sum(s, loss_sum, losses_.data(), BT);
  ck.finish_forward(s);
}

void Llama::block_backward(Stream& s, CView p, float* g, CView res_in, BlockActs& a, View dres) {
  const int B = shape_.B, T = shape_.T, BT = B * T, C = d_.C, H = d_.H, KV = d_.KV, hd = d_.hd, I = d_.I;
  const int Q = H * hd, QKV = Q + 2 * KV * hd;
  const Offsets& o = *off_;
  // down: res_out = res2 + hidden W_d^T
  linear_backward(s, dhidden_, Accumulate::no, g + o.wd, cfg_.mlp_bias ? g + o.bd : nullptr, dres, a.hidden,
                  offset(p, o.wd), I, C);
  be_.swiglu_backward(s, dgate_up_, a.gate_up, dhidden_, BT, I);
  // gate and up: gate_up = norm2 W_gu^T
  linear_backward(s, dnorm_, Accumulate::no, g + o.wgu, cfg_.mlp_bias ? g + o.bgu : nullptr, dgate_up_, a.norm2,
                  offset(p, o.wgu), C, 2 * I);
  be_.rmsnorm_backward(s, dres, g + o.norm2, dnorm_, a.res2, offset(p, o.norm2), a.rstd2.data(), BT, C);
  // output projection: res2 = res_in + atty W_o^T
  linear_backward(s, datty_, Accumulate::no, g + o.wo, cfg_.o_bias ? g + o.bo : nullptr, dres, a.atty,
                  offset(p, o.wo), Q, C);
  be_.attention_backward(s, dqkv_, datt_.data(), datty_, a.qkv, a.atty, a.att.data(), AttentionShape{B, T, H, KV, hd});
  // Through the rotation (its transpose), then q/k/v: qkv = norm1 W_qkv^T
  be_.rope(s, dqkv_, rope_.data(), BT, T, H, hd, QKV, true);
  be_.rope(s, dqkv_.at(Q), rope_.data(), BT, T, KV, hd, QKV, true);
  linear_backward(s, dnorm_, Accumulate::no, g + o.wqkv, cfg_.qkv_bias ? g + o.bqkv : nullptr, dqkv_, a.norm1,
                  offset(p, o.wqkv), C, QKV);
  be_.rmsnorm_backward(s, dres, g + o.norm1, dnorm_, res_in, offset(p, o.norm1), a.rstd1.data(), BT, C);
}

void Llama::backward(ParamProvider& params, Stream& s) {
  const int B = shape_.B, T = shape_.T, BT = B * T, C = d_.C;
  const std::size_t nC = std::size_t(BT) * C;
  const Offsets& o = *off_;
  const int emb = layout_.embedding_group(), fn = layout_.final_norm_group();

  // The head, chunks of rows from the last (whose gradient forward left in place) to the first.
  ActivationCheckpoints& ck = *ckpts_;
  ck.start_backward(s);
  const CView pe = params.acquire(emb, Pass::backward);
  float* ge = params.grad(emb);
  lm_head_backward(be_, s, lm_head(lowp(s, norm_, lp_act_.data(), nC), offset(pe, o.head)),
                   [&](CView g, std::size_t n) { return lowp(s, g, lp_grad_.data(), n); }, dnorm_, ge + o.head);
  params.release(emb, Pass::backward);

  const CView pf = params.acquire(fn, Pass::backward);
  be_.fill(s, dres_, 0.0f, nC);
  be_.rmsnorm_backward(s, dres_, params.grad(fn) + o.final_norm, dnorm_, ck.load(s, cfg_.n_layer),
                       offset(pf, o.final_norm), norm_rstd_.data(), BT, C);
  ck.done(s, cfg_.n_layer);
  params.release(fn, Pass::backward);
  params.grad_ready(fn);

  for (int l = cfg_.n_layer - 1; l >= 0; --l) {
    const int g = layout_.block_group(l);
    const CView p = params.acquire(g, Pass::backward);
    BlockActs& a = acts_[ckpt_ == ActivationCheckpointing::off ? l : 0];
    const CView in = ck.load(s, l);
    if (ckpt_ == ActivationCheckpointing::per_block) block_forward(s, p, in, a, ck.recompute_output(l));
    block_backward(s, p, params.grad(g), in, a, dres_);
    ck.done(s, l);
    params.release(g, Pass::backward);
    params.grad_ready(g);
  }

  be_.encoder_backward(s, ge + o.embed, nullptr, dres_, inputs_.data(), B, T, C);
  params.grad_ready(emb);
}

}  // namespace tz
