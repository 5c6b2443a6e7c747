// Engine: resident param/grad/optimizer buffers per group and the AdamW step.
#include "zero/engine.h"

#include <cmath>
#include <cstring>

#include "core/backend.h"
#include "core/error.h"
#include "model/gpt_init.h"

namespace tz {

Engine::Engine(Device& dev, const ParamLayout& layout, DType working, const std::vector<std::vector<float>>& init,
               AdamConfig adam, LrConfig lr)
    : dev_(dev), layout_(layout), working_(working), adam_(adam), lr_(lr) {
  TZ_CHECK(init.size() == layout.groups.size(), "initial values for ", init.size(), " groups, the model has ",
           layout.groups.size());
  std::size_t before = dev.memory().used();
  Backend& be = dev.backend();
  for (std::size_t g = 0; g < layout.groups.size(); ++g) {
    const GroupSpec& gs = layout.groups[g];
    TZ_CHECK(init[g].size() == gs.count, "group ", gs.name, " has ", init[g].size(), " initial values, expected ",
             gs.count);
    master_.emplace_back(dev, gs.count, (working == DType::f32 ? "params " : "fp32 master ") + gs.name);
    std::memcpy(master_.back().data(), init[g].data(), gs.count * sizeof(float));
    if (working != DType::f32) {
      params_lp_.emplace_back(dev, gs.count, "params " + gs.name);
      be.cast(params_lp_.back().data(), working, master_.back().data(), DType::f32, gs.count);
    }
    grads_.emplace_back(dev, gs.count, "grads " + gs.name);
    m_.emplace_back(dev, gs.count, "adam m " + gs.name);
    v_.emplace_back(dev, gs.count, "adam v " + gs.name);
    be.fill(grads_.back().data(), 0.0f, gs.count);
    be.fill(m_.back().data(), 0.0f, gs.count);
    be.fill(v_.back().data(), 0.0f, gs.count);
  }
  persistent_bytes_ = dev.memory().used() - before;
}

CView Engine::acquire(int group, Pass) {
  if (working_ == DType::f32) return cview(master_[group].data());
  return {params_lp_[group].data(), working_};
}

const float* Engine::master(int group) const { return master_[group].data(); }

void Engine::zero_grad() {
  for (auto& g : grads_) dev_.backend().fill(g.data(), 0.0f, g.size());
}

StepStats Engine::step() {
  Backend& be = dev_.backend();
  StepStats st;
  st.step = ++step_;
  double sq = 0;
  for (auto& g : grads_) sq += be.sum_squares(g.data(), g.size());
  st.grad_norm = std::sqrt(sq);
  if (!std::isfinite(st.grad_norm)) {
    --step_;
    TZ_FAIL("the gradient norm is ", st.grad_norm, " at step ", st.step,
            ": the loss diverged (NaN/Inf); lower --lr or raise --warmup");
  }
  float clip = 1.0f;
  if (adam_.grad_clip > 0 && st.grad_norm > adam_.grad_clip) clip = float(adam_.grad_clip / (st.grad_norm + 1e-6));
  st.lr = learning_rate(lr_, st.step);
  for (std::size_t g = 0; g < layout_.groups.size(); ++g) {
    for (const TensorSpec& t : layout_.groups[g].tensors) {
      AdamStep s{st.lr, adam_.beta1, adam_.beta2, adam_.eps, is_decayed(t) ? adam_.weight_decay : 0.0f, st.step, clip};
      void* w = working_ == DType::f32 ? nullptr : static_cast<void*>(params_lp_[g].data() + t.offset);
      be.adamw(master_[g].data() + t.offset, m_[g].data() + t.offset, v_[g].data() + t.offset,
               grads_[g].data() + t.offset, t.count, s, w, working_);
    }
  }
  zero_grad();
  return st;
}

}  // namespace tz
