// GPT-2 forward/backward: pre-LN blocks (attention, GELU MLP), final LayerNorm, LM head tied to wte.
// Residual adds are fused into the projections (out = residual, then out += x @ W + b), so the
// backward carries one residual-gradient buffer through every block.
#include "model/gpt.h"

#include <algorithm>
#include <cstring>

#include "core/backend.h"
#include "core/error.h"

namespace tz {

// Activations in the run's activation dtype; statistics and the attention's saved rows in fp32.
struct Gpt::BlockActs {
  DynBuffer ln1, qkv, atty, res2, ln2, fch, fch_gelu;
  Buffer<float> ln1_mean, ln1_rstd, att, ln2_mean, ln2_rstd;
};

namespace {

constexpr const char* kActs = "activations and scratch";

// One set of block activations' buffer names: "activations <what> [set]".
std::string act_name(const char* what, int set) { return std::string("activations ") + what + " [" + std::to_string(set) + "]"; }

}  // namespace

int Gpt::logits_rows(const ModelConfig& cfg, ModelShape s) { return lm_head_rows(cfg.padded_vocab_size, s); }

std::vector<GemmShape> Gpt::gemm_shapes(const ModelConfig& cfg, ModelShape s, DType act) {
  const int BT = s.B * s.T, C = cfg.n_embd, Vp = cfg.padded_vocab_size;
  const Trans N = Trans::no, T = Trans::yes;
  const DType W = DType::f32;  // weight gradients
  std::vector<GemmShape> v;
  v.push_back({N, N, BT, 3 * C, C, act, "qkv.fwd"});
  v.push_back({N, N, BT, C, C, act, "attproj.fwd"});
  v.push_back({N, N, BT, 4 * C, C, act, "fc.fwd"});
  v.push_back({N, N, BT, C, 4 * C, act, "fcproj.fwd"});
  // The LM head, per chunk of rows (and the last, shorter chunk, whose workspace need may differ).
  const int R = logits_rows(cfg, s);
  std::vector<int> rows{R};
  if (BT % R) rows.push_back(BT % R);
  for (int r : rows) {
    v.push_back({N, T, r, Vp, C, act, "lmhead.fwd"});  // logits
    v.push_back({N, N, r, C, Vp, act, "lmhead.dgrad"});
    v.push_back({T, N, Vp, C, r, W, "lmhead.wgrad"});
  }
  const struct {
    int in, out;
    const char* name;
  } linears[] = {{C, 3 * C, "qkv"}, {C, C, "attproj"}, {C, 4 * C, "fc"}, {4 * C, C, "fcproj"}};
  for (const auto& l : linears) {
    v.push_back({N, T, BT, l.in, l.out, act, std::string(l.name) + ".dgrad"});
    v.push_back({T, N, l.in, l.out, BT, W, std::string(l.name) + ".wgrad"});
  }
  return v;
}

std::vector<BufferSpec> Gpt::buffers(const ModelConfig& cfg, ModelShape s, Precision pr, ActivationCheckpointing ckpt,
                                     MemoryKind ckpt_kind, DeviceKind device) {
  const std::size_t B = s.B, T = s.T, BT = B * T, C = cfg.n_embd, Vp = cfg.padded_vocab_size;
  const std::size_t act = dtype_size(pr.act);
  const AttentionShape att = AttentionShape::multi_head(s.B, s.T, cfg.n_embd, cfg.n_head);
  std::vector<BufferSpec> v;
  auto f = [&](std::string name, std::size_t floats) { v.push_back({std::move(name), kActs, MemoryKind::device, floats * 4}); };
  auto a = [&](std::string name, std::size_t n) { v.push_back({std::move(name), kActs, MemoryKind::device, n * act}); };
  for (int l = 0; l <= cfg.n_layer; ++l)
    v.push_back({ActivationCheckpoints::checkpoint_name(l),
                 ckpt_kind == MemoryKind::device ? kActs : "activation checkpoints", ckpt_kind, BT * C * act});
  for (int i = 0; i < ActivationCheckpoints::staging_count(ckpt_kind, ckpt); ++i)
    a(ActivationCheckpoints::staging_name(i), BT * C);
  const int sets = ckpt == ActivationCheckpointing::off ? cfg.n_layer : 1;
  for (int i = 0; i < sets; ++i) {
    a(act_name("ln1", i), BT * C);
    f(act_name("ln1 mean", i), BT);
    f(act_name("ln1 rstd", i), BT);
    a(act_name("qkv", i), BT * 3 * C);
    a(act_name("attention output", i), BT * C);
    f(act_name("attention probabilities", i), attention_saved_floats(device, att, pr.act));
    a(act_name("residual after attention", i), BT * C);
    a(act_name("ln2", i), BT * C);
    f(act_name("ln2 mean", i), BT);
    f(act_name("ln2 rstd", i), BT);
    a(act_name("mlp hidden", i), BT * 4 * C);
    a(act_name("mlp gelu", i), BT * 4 * C);
  }
  a("activations final layernorm", BT * C);
  f("activations final layernorm mean", BT);
  f("activations final layernorm rstd", BT);
  a("activations logits", std::size_t(logits_rows(cfg, s)) * Vp);
  f("activations losses", BT);
  f("activations input tokens", BT);  // int32
  f("activations target tokens", BT);
  a("activations residual gradient", BT * C);
  a("activations layernorm gradient", BT * C);
  a("activations attention output gradient", BT * C);
  a("activations qkv gradient", BT * 3 * C);
  a("activations mlp hidden gradient", BT * 4 * C);
  f("activations attention scratch", attention_scratch_floats(device, att, pr.act));
  if (pr.act != pr.param) {  // fp32 activations of 16-bit parameters: each product's inputs cast first
    v.push_back({"activations low-precision matmul input", kActs, MemoryKind::device, BT * 4 * C * 2});
    v.push_back({"activations low-precision gradient", kActs, MemoryKind::device,
                 std::max<std::size_t>(std::size_t(logits_rows(cfg, s)) * Vp, BT * 4 * C) * 2});
  }
  std::size_t ws = 0;
  for (const GemmShape& g : gemm_shapes(cfg, s, pr.act)) ws = std::max(ws, gemm_workspace_floats(device, pr.param, g));
  if (ws) v.push_back({"matmul workspace", "matmul workspace", MemoryKind::device, ws * 4});
  return v;
}

std::vector<int> Gpt::gradient_order(const ParamLayout& layout) { return layout.backward_order(); }

Gpt::Gpt(Device& dev, const ModelConfig& cfg, ModelShape shape, Precision pr, ActivationCheckpointing ckpt,
         MemoryKind ckpt_kind)
    : own_(std::make_unique<PlannedBuffers>(dev, buffers(cfg, shape, pr, ckpt, ckpt_kind, dev.kind()))),
      dev_(dev), be_(dev.backend()), cfg_(cfg), layout_(gpt_layout(cfg, &off_)), shape_(shape), dtype_(pr.param),
      act_(pr.act), ckpt_(ckpt), ckpt_kind_(ckpt_kind) {
  init(*own_);
  own_->expect_all_taken();
}

Gpt::Gpt(Device& dev, const ModelConfig& cfg, ModelShape shape, Precision pr, ActivationCheckpointing ckpt,
         PlannedBuffers& planned, MemoryKind ckpt_kind)
    : dev_(dev), be_(dev.backend()), cfg_(cfg), layout_(gpt_layout(cfg, &off_)), shape_(shape), dtype_(pr.param),
      act_(pr.act), ckpt_(ckpt), ckpt_kind_(ckpt_kind) {
  init(planned);
}

void Gpt::init(PlannedBuffers& planned) {
  TZ_CHECK(shape_.B >= 1, "micro-batch must be at least 1, got ", shape_.B);
  TZ_CHECK(shape_.T >= 1 && shape_.T <= cfg_.max_seq_len, "seq-len ", shape_.T, " must be in [1, ", cfg_.max_seq_len,
           "] (the model's position table); raise --seq-len of the model or lower the batch's");
  check_precision({dtype_, act_});
  const std::vector<BufferSpec> specs = buffers(cfg_, shape_, {dtype_, act_}, ckpt_, ckpt_kind_, dev_.kind());
  act_bytes_ = total_bytes(specs, MemoryKind::device);
  offloaded_ckpt_bytes_ = total_bytes(specs, MemoryKind::pinned_host);
  take_buffers(planned);
}

void Gpt::take_buffers(PlannedBuffers& planned) {
  auto f = [&](const std::string& name) { return planned.take<float>(name); };
  auto a = [&](const std::string& name) { return planned.take_as(name, act_); };
  ckpts_ = std::make_unique<ActivationCheckpoints>(dev_, cfg_.n_layer, ckpt_kind_, ckpt_, act_, planned);
  const int sets = ckpt_ == ActivationCheckpointing::off ? cfg_.n_layer : 1;
  acts_.resize(sets);
  for (int i = 0; i < sets; ++i) {
    BlockActs& b = acts_[i];
    b.ln1 = a(act_name("ln1", i));
    b.ln1_mean = f(act_name("ln1 mean", i));
    b.ln1_rstd = f(act_name("ln1 rstd", i));
    b.qkv = a(act_name("qkv", i));
    b.atty = a(act_name("attention output", i));
    b.att = f(act_name("attention probabilities", i));
    b.res2 = a(act_name("residual after attention", i));
    b.ln2 = a(act_name("ln2", i));
    b.ln2_mean = f(act_name("ln2 mean", i));
    b.ln2_rstd = f(act_name("ln2 rstd", i));
    b.fch = a(act_name("mlp hidden", i));
    b.fch_gelu = a(act_name("mlp gelu", i));
  }
  lnf_ = a("activations final layernorm");
  lnf_mean_ = f("activations final layernorm mean");
  lnf_rstd_ = f("activations final layernorm rstd");
  logits_ = a("activations logits");
  losses_ = f("activations losses");
  inputs_ = planned.take<std::int32_t>("activations input tokens");
  targets_ = planned.take<std::int32_t>("activations target tokens");
  dres_ = a("activations residual gradient");
  dln_ = a("activations layernorm gradient");
  datty_ = a("activations attention output gradient");
  dqkv_ = a("activations qkv gradient");
  dfch_ = a("activations mlp hidden gradient");
  datt_ = f("activations attention scratch");
  if (act_ != dtype_) {
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
          head, logits_, losses_.data(), targets_.data(), dloss_};
}

CView Gpt::lowp(Stream& s, CView x, void* scratch, std::size_t n) {
  if (x.dtype == dtype_) return x;
  be_.cast(s, scratch, dtype_, x.ptr, x.dtype, n);
  return {scratch, dtype_};
}

void Gpt::linear_forward(Stream& s, View out, CView inp, void* inp_lp, CView w, CView b, int IC, int OC,
                         Accumulate acc) {
  const int BT = shape_.B * shape_.T;
  CView x = lowp(s, inp, inp_lp, std::size_t(BT) * IC);
  be_.gemm(s, Trans::no, Trans::no, BT, OC, IC, x, w, out, acc);
  be_.add_bias(s, out, b, BT, OC);
}

// out = x, a copy in the activation dtype (the residual the next projection adds into).
void Gpt::copy_acts(Stream& s, View out, CView x, std::size_t n) {
  be_.copy_async(s, out.ptr, x.ptr, n * dtype_size(act_));
}

void Gpt::block_forward(Stream& s, int layer, CView p, CView res_in, BlockActs& a, View res_out) {
  const int B = shape_.B, T = shape_.T, BT = B * T, C = cfg_.n_embd, NH = cfg_.n_head;
  const BlockOffsets& o = off_.block;
  void* lp = lp_act_.data();
  be_.layernorm_forward(s, a.ln1, a.ln1_mean.data(), a.ln1_rstd.data(), res_in, offset(p, o.ln1_w),
                        offset(p, o.ln1_b), BT, C);
  linear_forward(s, a.qkv, a.ln1, lp, offset(p, o.qkv_w), offset(p, o.qkv_b), C, 3 * C, Accumulate::no);
  be_.attention_forward(s, a.atty, a.att.data(), datt_.data(), a.qkv, B, T, C, NH);
  copy_acts(s, a.res2, res_in, std::size_t(BT) * C);
  linear_forward(s, a.res2, a.atty, lp, offset(p, o.attproj_w), offset(p, o.attproj_b), C, C, Accumulate::yes);
  be_.layernorm_forward(s, a.ln2, a.ln2_mean.data(), a.ln2_rstd.data(), a.res2, offset(p, o.ln2_w),
                        offset(p, o.ln2_b), BT, C);
  linear_forward(s, a.fch, a.ln2, lp, offset(p, o.fc_w), offset(p, o.fc_b), C, 4 * C, Accumulate::no);
  be_.gelu_forward(s, a.fch_gelu, a.fch, std::size_t(BT) * 4 * C);
  copy_acts(s, res_out, a.res2, std::size_t(BT) * C);
  linear_forward(s, res_out, a.fch_gelu, lp, offset(p, o.fcproj_w), offset(p, o.fcproj_b), 4 * C, C,
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
    const CView in = ck.reading(l);
    block_forward(s, l, p, in, a, ck.write(s, l + 1));
    ck.written(s, l + 1);
    params.release(g, Pass::forward);
  }
  const int fn = layout_.final_norm_group();
  CView pf = params.acquire(fn, Pass::forward);
  be_.layernorm_forward(s, lnf_, lnf_mean_.data(), lnf_rstd_.data(), ck.reading(cfg_.n_layer),
                        offset(pf, off_.lnf_w), offset(pf, off_.lnf_b), BT, C);
  params.release(fn, Pass::forward);
  // The LM head and the loss, chunk by chunk of rows: each chunk's logits become its gradient in place;
  // the last chunk's stays for backward.
  dloss_ = dloss_scale / float(BT);
  lm_head_forward(be_, s, lm_head(lowp(s, lnf_, lp_act_.data(), std::size_t(BT) * C), offset(pe, off_.wte)));
  params.release(emb, Pass::forward);
  be_.sum(s, loss_sum, losses_.data(), BT);
  ck.finish_forward(s);
}

void Gpt::block_backward(Stream& s, int layer, CView p, float* g, CView res_in, BlockActs& a, View dres) {
  const int B = shape_.B, T = shape_.T, BT = B * T, C = cfg_.n_embd, NH = cfg_.n_head;
  const BlockOffsets& o = off_.block;
  const std::size_t nC = std::size_t(BT) * C, n4C = nC * 4, n3C = nC * 3;
  void* lpa = lp_act_.data();
  void* lpg = lp_grad_.data();

  // MLP projection: res_out = res2 + fch_gelu @ Wfcp + b
  CView dy = lowp(s, dres, lpg, nC);
  be_.gemm(s, Trans::no, Trans::yes, BT, 4 * C, C, dy, offset(p, o.fcproj_w), dfch_, Accumulate::no);
  be_.gemm(s, Trans::yes, Trans::no, 4 * C, C, BT, lowp(s, a.fch_gelu, lpa, n4C), dy, g + o.fcproj_w,
           Accumulate::yes);
  be_.bias_backward(s, g + o.fcproj_b, dres, BT, C);
  be_.gelu_backward(s, dfch_, a.fch, dfch_, n4C);
  // MLP expansion: fch = ln2 @ Wfc + b
  dy = lowp(s, dfch_, lpg, n4C);
  be_.gemm(s, Trans::no, Trans::yes, BT, C, 4 * C, dy, offset(p, o.fc_w), dln_, Accumulate::no);
  be_.gemm(s, Trans::yes, Trans::no, C, 4 * C, BT, lowp(s, a.ln2, lpa, nC), dy, g + o.fc_w, Accumulate::yes);
  be_.bias_backward(s, g + o.fc_b, dfch_, BT, 4 * C);
  be_.layernorm_backward(s, dres, g + o.ln2_w, g + o.ln2_b, dln_, a.res2, offset(p, o.ln2_w), a.ln2_mean.data(),
                         a.ln2_rstd.data(), BT, C);
  // Attention projection: res2 = res_in + atty @ Wproj + b
  dy = lowp(s, dres, lpg, nC);
  be_.gemm(s, Trans::no, Trans::yes, BT, C, C, dy, offset(p, o.attproj_w), datty_, Accumulate::no);
  be_.gemm(s, Trans::yes, Trans::no, C, C, BT, lowp(s, a.atty, lpa, nC), dy, g + o.attproj_w, Accumulate::yes);
  be_.bias_backward(s, g + o.attproj_b, dres, BT, C);
  be_.attention_backward(s, dqkv_, datt_.data(), datty_, a.qkv, a.atty, a.att.data(), B, T, C, NH);
  // QKV: qkv = ln1 @ Wqkv + b
  dy = lowp(s, dqkv_, lpg, n3C);
  be_.gemm(s, Trans::no, Trans::yes, BT, C, 3 * C, dy, offset(p, o.qkv_w), dln_, Accumulate::no);
  be_.gemm(s, Trans::yes, Trans::no, C, 3 * C, BT, lowp(s, a.ln1, lpa, nC), dy, g + o.qkv_w, Accumulate::yes);
  be_.bias_backward(s, g + o.qkv_b, dqkv_, BT, 3 * C);
  be_.layernorm_backward(s, dres, g + o.ln1_w, g + o.ln1_b, dln_, res_in, offset(p, o.ln1_w), a.ln1_mean.data(),
                         a.ln1_rstd.data(), BT, C);
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
  lm_head_backward(be_, s, lm_head(lowp(s, lnf_, lp_act_.data(), nC), offset(pe, off_.wte)),
                   [&](CView g, std::size_t n) { return lowp(s, g, lp_grad_.data(), n); }, dln_, ge + off_.wte);
  params.release(emb, Pass::backward);

  CView pf = params.acquire(fn, Pass::backward);
  float* gf = params.grad(fn);
  be_.fill(s, dres_, 0.0f, nC);
  be_.layernorm_backward(s, dres_, gf + off_.lnf_w, gf + off_.lnf_b, dln_, ck.load(s, cfg_.n_layer),
                         offset(pf, off_.lnf_w), lnf_mean_.data(), lnf_rstd_.data(), BT, C);
  ck.done(s, cfg_.n_layer);
  params.release(fn, Pass::backward);
  params.grad_ready(fn);

  for (int l = cfg_.n_layer - 1; l >= 0; --l) {
    int g = layout_.block_group(l);
    CView p = params.acquire(g, Pass::backward);
    BlockActs& a = acts_[ckpt_ == ActivationCheckpointing::off ? l : 0];
    // Recompute this block's activations from its checkpointed input (the output is not needed).
    const CView in = ck.load(s, l);
    if (ckpt_ == ActivationCheckpointing::per_block) block_forward(s, l, p, in, a, ck.recompute_output(l));
    block_backward(s, l, p, params.grad(g), in, a, dres_);
    ck.done(s, l);
    params.release(g, Pass::backward);
    params.grad_ready(g);
  }

  be_.encoder_backward(s, ge + off_.wte, ge + off_.wpe, dres_, inputs_.data(), B, T, C);
  params.grad_ready(emb);
}

}  // namespace tz
