// GPT-2 forward/backward: pre-LN blocks (attention, GELU MLP), final LayerNorm, LM head tied to wte.
// Residual adds are fused into the projections (out = residual, then out += x @ W + b), so the
// backward carries one residual-gradient buffer through every block.
#include "model/gpt.h"

#include <cstring>

#include "core/backend.h"
#include "core/error.h"

namespace tz {

struct Gpt::BlockActs {
  Buffer<float> ln1, ln1_mean, ln1_rstd, qkv, atty, att, res2, ln2, ln2_mean, ln2_rstd, fch, fch_gelu;
};

namespace {

std::size_t block_act_floats(std::size_t BT, std::size_t C, std::size_t B, std::size_t NH, std::size_t T) {
  // ln1, qkv, atty, res2, ln2, fch, fch_gelu, the four LayerNorm statistics, att
  return BT * C + BT * 3 * C + BT * C + BT * C + BT * C + BT * 4 * C + BT * 4 * C + 4 * BT + B * NH * T * T;
}

}  // namespace

std::size_t Gpt::activation_bytes_for(const GptConfig& cfg, GptShape s, DType dt, ActivationCheckpointing ckpt) {
  std::size_t B = s.B, T = s.T, BT = B * T, C = cfg.n_embd, NH = cfg.n_head, L = cfg.n_layer, Vp = cfg.padded_vocab_size;
  std::size_t sets = ckpt == ActivationCheckpointing::off ? L : 1;
  std::size_t floats = (L + 1) * BT * C + sets * block_act_floats(BT, C, B, NH, T);
  floats += BT * C + 2 * BT + BT * Vp + BT;                        // lnf, its statistics, logits, losses
  floats += BT * C + BT * C + BT * C + BT * 3 * C + BT * 4 * C + B * NH * T * T;  // backward scratch
  std::size_t bytes = floats * sizeof(float) + 2 * BT * sizeof(std::int32_t);
  if (dt != DType::f32) bytes += (BT * 4 * C + BT * std::max<std::size_t>(Vp, 4 * C)) * 2;
  return bytes;
}

Gpt::Gpt(Device& dev, const GptConfig& cfg, GptShape shape, DType dt, ActivationCheckpointing ckpt,
         Device* checkpoint_dev)
    : dev_(dev), be_(dev.backend()), cfg_(cfg), layout_(ParamLayout::build(cfg)), shape_(shape), dtype_(dt),
      ckpt_(ckpt) {
  TZ_CHECK(shape.B >= 1, "micro-batch must be at least 1, got ", shape.B);
  TZ_CHECK(shape.T >= 1 && shape.T <= cfg.max_seq_len, "seq-len ", shape.T, " must be in [1, ", cfg.max_seq_len,
           "] (the model's position table); raise --seq-len of the model or lower the batch's");
  TZ_CHECK(dt == DType::f32 || dt == DType::bf16 || dt == DType::f16, "unsupported compute dtype ", dtype_name(dt));
  const std::size_t B = shape.B, T = shape.T, BT = B * T, C = cfg.n_embd, NH = cfg.n_head,
                    Vp = cfg.padded_vocab_size;
  std::size_t before = dev.memory().used();
  auto f = [&](std::size_t n, const char* what) { return Buffer<float>(dev, n, std::string("activations: ") + what); };
  Device& cdev = checkpoint_dev ? *checkpoint_dev : dev;
  std::size_t cbefore = cdev.memory().used();
  for (int l = 0; l <= cfg.n_layer; ++l)
    residual_.push_back(Buffer<float>(cdev, BT * C, "activation checkpoint (residual stream)"));
  if (&cdev != &dev) offloaded_ckpt_bytes_ = cdev.memory().used() - cbefore;
  int sets = ckpt == ActivationCheckpointing::off ? cfg.n_layer : 1;
  acts_.resize(sets);
  for (auto& a : acts_) {
    a.ln1 = f(BT * C, "ln1");
    a.ln1_mean = f(BT, "ln1 mean");
    a.ln1_rstd = f(BT, "ln1 rstd");
    a.qkv = f(BT * 3 * C, "qkv");
    a.atty = f(BT * C, "attention output");
    a.att = f(B * NH * T * T, "attention probabilities");
    a.res2 = f(BT * C, "residual after attention");
    a.ln2 = f(BT * C, "ln2");
    a.ln2_mean = f(BT, "ln2 mean");
    a.ln2_rstd = f(BT, "ln2 rstd");
    a.fch = f(BT * 4 * C, "mlp hidden");
    a.fch_gelu = f(BT * 4 * C, "mlp gelu");
  }
  lnf_ = f(BT * C, "final layernorm");
  lnf_mean_ = f(BT, "final layernorm mean");
  lnf_rstd_ = f(BT, "final layernorm rstd");
  logits_ = f(BT * Vp, "logits");
  losses_ = f(BT, "losses");
  inputs_ = Buffer<std::int32_t>(dev, BT, "activations: input tokens");
  targets_ = Buffer<std::int32_t>(dev, BT, "activations: target tokens");
  dres_ = f(BT * C, "residual gradient");
  dln_ = f(BT * C, "layernorm gradient");
  datty_ = f(BT * C, "attention output gradient");
  dqkv_ = f(BT * 3 * C, "qkv gradient");
  dfch_ = f(BT * 4 * C, "mlp hidden gradient");
  datt_ = f(B * NH * T * T, "attention probability gradient");
  if (dt != DType::f32) {
    lp_act_ = Buffer<std::uint16_t>(dev, BT * 4 * C, "activations: low-precision matmul input");
    lp_grad_ = Buffer<std::uint16_t>(dev, BT * std::max<std::size_t>(Vp, 4 * C), "activations: low-precision gradient");
  }
  act_bytes_ = dev.memory().used() - before;
}

Gpt::~Gpt() = default;

CView Gpt::lowp(const float* x, void* scratch, std::size_t n) {
  if (dtype_ == DType::f32) return cview(x);
  be_.cast(scratch, dtype_, x, DType::f32, n);
  return {scratch, dtype_};
}

void Gpt::linear_forward(float* out, const float* inp, void* inp_lp, CView w, CView b, int IC, int OC,
                         Accumulate acc) {
  const int BT = shape_.B * shape_.T;
  CView x = lowp(inp, inp_lp, std::size_t(BT) * IC);
  be_.gemm(Trans::no, Trans::no, BT, OC, IC, x, w, out, acc);
  be_.add_bias(out, b, BT, OC);
}

void Gpt::block_forward(int layer, CView p, const float* res_in, BlockActs& a, float* res_out) {
  const int B = shape_.B, T = shape_.T, BT = B * T, C = cfg_.n_embd, NH = cfg_.n_head;
  const BlockOffsets& o = layout_.block;
  void* lp = lp_act_.data();
  be_.layernorm_forward(a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), res_in, offset(p, o.ln1_w),
                        offset(p, o.ln1_b), BT, C);
  linear_forward(a.qkv.data(), a.ln1.data(), lp, offset(p, o.qkv_w), offset(p, o.qkv_b), C, 3 * C, Accumulate::no);
  be_.attention_forward(a.atty.data(), a.att.data(), a.qkv.data(), B, T, C, NH);
  be_.cast(a.res2.data(), DType::f32, res_in, DType::f32, std::size_t(BT) * C);
  linear_forward(a.res2.data(), a.atty.data(), lp, offset(p, o.attproj_w), offset(p, o.attproj_b), C, C,
                 Accumulate::yes);
  be_.layernorm_forward(a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.res2.data(), offset(p, o.ln2_w),
                        offset(p, o.ln2_b), BT, C);
  linear_forward(a.fch.data(), a.ln2.data(), lp, offset(p, o.fc_w), offset(p, o.fc_b), C, 4 * C, Accumulate::no);
  be_.gelu_forward(a.fch_gelu.data(), a.fch.data(), std::size_t(BT) * 4 * C);
  be_.cast(res_out, DType::f32, a.res2.data(), DType::f32, std::size_t(BT) * C);
  linear_forward(res_out, a.fch_gelu.data(), lp, offset(p, o.fcproj_w), offset(p, o.fcproj_b), 4 * C, C,
                 Accumulate::yes);
}

float Gpt::forward(ParamProvider& params, const std::int32_t* inputs, const std::int32_t* targets,
                   float dloss_scale) {
  const int B = shape_.B, T = shape_.T, BT = B * T, C = cfg_.n_embd, V = cfg_.vocab_size,
            Vp = cfg_.padded_vocab_size;
  for (int i = 0; i < BT; ++i) {
    TZ_CHECK(inputs[i] >= 0 && inputs[i] < V, "input token ", inputs[i], " at position ", i,
             " is outside the vocabulary [0, ", V, ")");
    TZ_CHECK(targets[i] >= 0 && targets[i] < V, "target token ", targets[i], " at position ", i,
             " is outside the vocabulary [0, ", V, ")");
  }
  std::memcpy(inputs_.data(), inputs, sizeof(std::int32_t) * BT);
  std::memcpy(targets_.data(), targets, sizeof(std::int32_t) * BT);

  // The embedding group stays acquired for the whole forward: the LM head reuses wte (tied), and one
  // acquisition per pass keeps ZeRO-3's gather volume at one copy of the parameters.
  const int emb = layout_.embedding_group();
  CView pe = params.acquire(emb, Pass::forward);
  be_.encoder_forward(residual_[0].data(), inputs_.data(), offset(pe, layout_.wte_offset),
                      offset(pe, layout_.wpe_offset), B, T, C);
  for (int l = 0; l < cfg_.n_layer; ++l) {
    int g = layout_.block_group(l);
    CView p = params.acquire(g, Pass::forward);
    BlockActs& a = acts_[ckpt_ == ActivationCheckpointing::off ? l : 0];
    block_forward(l, p, residual_[l].data(), a, residual_[l + 1].data());
    params.release(g, Pass::forward);
  }
  const int fn = layout_.final_norm_group();
  CView pf = params.acquire(fn, Pass::forward);
  be_.layernorm_forward(lnf_.data(), lnf_mean_.data(), lnf_rstd_.data(), residual_[cfg_.n_layer].data(),
                        offset(pf, layout_.lnf_w_offset), offset(pf, layout_.lnf_b_offset), BT, C);
  params.release(fn, Pass::forward);
  CView x = lowp(lnf_.data(), lp_act_.data(), std::size_t(BT) * C);
  be_.gemm(Trans::no, Trans::yes, BT, Vp, C, x, offset(pe, layout_.wte_offset), logits_.data(), Accumulate::no);
  params.release(emb, Pass::forward);

  be_.softmax_xent(losses_.data(), logits_.data(), targets_.data(), BT, V, Vp, dloss_scale / float(BT));
  double sum = 0;
  for (int i = 0; i < BT; ++i) sum += losses_[i];
  return float(sum / BT);
}

void Gpt::block_backward(int layer, CView p, float* g, const float* res_in, BlockActs& a, float* dres) {
  const int B = shape_.B, T = shape_.T, BT = B * T, C = cfg_.n_embd, NH = cfg_.n_head;
  const BlockOffsets& o = layout_.block;
  const std::size_t nC = std::size_t(BT) * C, n4C = nC * 4, n3C = nC * 3;
  void* lpa = lp_act_.data();
  void* lpg = lp_grad_.data();

  // MLP projection: res_out = res2 + fch_gelu @ Wfcp + b
  CView dy = lowp(dres, lpg, nC);
  be_.gemm(Trans::no, Trans::yes, BT, 4 * C, C, dy, offset(p, o.fcproj_w), dfch_.data(), Accumulate::no);
  be_.gemm(Trans::yes, Trans::no, 4 * C, C, BT, lowp(a.fch_gelu.data(), lpa, n4C), dy, g + o.fcproj_w,
           Accumulate::yes);
  be_.bias_backward(g + o.fcproj_b, dres, BT, C);
  be_.gelu_backward(dfch_.data(), a.fch.data(), dfch_.data(), n4C);
  // MLP expansion: fch = ln2 @ Wfc + b
  dy = lowp(dfch_.data(), lpg, n4C);
  be_.gemm(Trans::no, Trans::yes, BT, C, 4 * C, dy, offset(p, o.fc_w), dln_.data(), Accumulate::no);
  be_.gemm(Trans::yes, Trans::no, C, 4 * C, BT, lowp(a.ln2.data(), lpa, nC), dy, g + o.fc_w, Accumulate::yes);
  be_.bias_backward(g + o.fc_b, dfch_.data(), BT, 4 * C);
  be_.layernorm_backward(dres, g + o.ln2_w, g + o.ln2_b, dln_.data(), a.res2.data(), offset(p, o.ln2_w),
                         a.ln2_mean.data(), a.ln2_rstd.data(), BT, C);
  // Attention projection: res2 = res_in + atty @ Wproj + b
  dy = lowp(dres, lpg, nC);
  be_.gemm(Trans::no, Trans::yes, BT, C, C, dy, offset(p, o.attproj_w), datty_.data(), Accumulate::no);
  be_.gemm(Trans::yes, Trans::no, C, C, BT, lowp(a.atty.data(), lpa, nC), dy, g + o.attproj_w, Accumulate::yes);
  be_.bias_backward(g + o.attproj_b, dres, BT, C);
  be_.attention_backward(dqkv_.data(), datt_.data(), datty_.data(), a.qkv.data(), a.att.data(), B, T, C, NH);
  // QKV: qkv = ln1 @ Wqkv + b
  dy = lowp(dqkv_.data(), lpg, n3C);
  be_.gemm(Trans::no, Trans::yes, BT, C, 3 * C, dy, offset(p, o.qkv_w), dln_.data(), Accumulate::no);
  be_.gemm(Trans::yes, Trans::no, C, 3 * C, BT, lowp(a.ln1.data(), lpa, nC), dy, g + o.qkv_w, Accumulate::yes);
  be_.bias_backward(g + o.qkv_b, dqkv_.data(), BT, 3 * C);
  be_.layernorm_backward(dres, g + o.ln1_w, g + o.ln1_b, dln_.data(), res_in, offset(p, o.ln1_w),
                         a.ln1_mean.data(), a.ln1_rstd.data(), BT, C);
}

void Gpt::backward(ParamProvider& params) {
  const int B = shape_.B, T = shape_.T, BT = B * T, C = cfg_.n_embd, Vp = cfg_.padded_vocab_size;
  const std::size_t nC = std::size_t(BT) * C;
  const int emb = layout_.embedding_group(), fn = layout_.final_norm_group();

  // LM head: logits = lnf @ wte^T. The embedding's parameter values are not needed after this
  // (encoder backward only scatters gradients), so it is released at once.
  CView pe = params.acquire(emb, Pass::backward);
  float* ge = params.grad(emb);
  CView dlog = lowp(logits_.data(), lp_grad_.data(), std::size_t(BT) * Vp);
  be_.gemm(Trans::no, Trans::no, BT, C, Vp, dlog, offset(pe, layout_.wte_offset), dln_.data(), Accumulate::no);
  be_.gemm(Trans::yes, Trans::no, Vp, C, BT, dlog, lowp(lnf_.data(), lp_act_.data(), nC), ge + layout_.wte_offset,
           Accumulate::yes);
  params.release(emb, Pass::backward);

  CView pf = params.acquire(fn, Pass::backward);
  float* gf = params.grad(fn);
  be_.fill(dres_.data(), 0.0f, nC);
  be_.layernorm_backward(dres_.data(), gf + layout_.lnf_w_offset, gf + layout_.lnf_b_offset, dln_.data(),
                         residual_[cfg_.n_layer].data(), offset(pf, layout_.lnf_w_offset), lnf_mean_.data(),
                         lnf_rstd_.data(), BT, C);
  params.release(fn, Pass::backward);
  params.grad_ready(fn);

  for (int l = cfg_.n_layer - 1; l >= 0; --l) {
    int g = layout_.block_group(l);
    CView p = params.acquire(g, Pass::backward);
    BlockActs& a = acts_[ckpt_ == ActivationCheckpointing::off ? l : 0];
    // Recompute this block's activations from its checkpointed input; residual_[l+1] was consumed
    // by block l+1's backward already, so rewriting it (with the same values) is safe.
    if (ckpt_ == ActivationCheckpointing::per_block) block_forward(l, p, residual_[l].data(), a, residual_[l + 1].data());
    block_backward(l, p, params.grad(g), residual_[l].data(), a, dres_.data());
    params.release(g, Pass::backward);
    params.grad_ready(g);
  }

  be_.encoder_backward(ge + layout_.wte_offset, ge + layout_.wpe_offset, dres_.data(), inputs_.data(), B, T, C);
  params.grad_ready(emb);
}

}  // namespace tz
