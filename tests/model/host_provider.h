// A ParamProvider for model tests: every group's parameters and gradients resident in host vectors,
// with a low-precision working copy for bf16/fp16 runs, counting acquisitions and the ready order.
#pragma once

#include <cstdint>
#include <vector>

#include "core/backend.h"
#include "core/dtype.h"
#include "model/param_provider.h"

namespace tz::test {

// Resident params and grads per group: the simplest ParamProvider.
struct HostProvider : ParamProvider {
  std::vector<std::vector<float>> p, g;
  std::vector<std::vector<std::uint16_t>> lp;  // working copy when the dtype is not fp32
  DType dtype = DType::f32;
  int acquired = 0, released = 0, ready = 0;
  CView acquire(int group, Pass) override {
    ++acquired;
    if (dtype == DType::f32) return cview(p[group].data());
    return {lp[group].data(), dtype};
  }
  void release(int, Pass) override { ++released; }
  float* grad(int group) override { return g[group].data(); }
  void grad_ready(int group) override {
    ++ready;
    order.push_back(group);
  }
  std::vector<int> order;  // the groups in the order backward reported them ready
  void set_dtype(DType d) {
    dtype = d;
    lp.assign(p.size(), {});
    for (std::size_t i = 0; i < p.size(); ++i) {
      lp[i].resize(p[i].size());
      for (std::size_t j = 0; j < p[i].size(); ++j)
        lp[i][j] = d == DType::bf16 ? float_to_bf16(p[i][j]).bits : float_to_fp16(p[i][j]).bits;
    }
  }
  void zero_grads() {
    g.assign(p.size(), {});
    for (std::size_t i = 0; i < p.size(); ++i) g[i].assign(p[i].size(), 0.0f);
  }
};

}  // namespace tz::test
