// The backend a Device hands out: its kernels as they are, each call timed into an OpProfile while one is
// attached (a pair of timing events on the call's stream, with the FLOPs and bytes it computes and moves),
// and nothing more than one branch while none is.
#pragma once

#include <memory>

#include "core/backend.h"
#include "core/op_profile.h"

namespace tz {

class ProfiledBackend final : public Backend {
 public:
  explicit ProfiledBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}
  void attach(OpProfile* profile) { profile_ = profile; }
  OpProfile* profile() const { return profile_; }

  void gemm(Stream& s, Trans ta, Trans tb, int M, int N, int K, CView A, CView B, View C, Accumulate acc) override;
  void set_gemm_workspace(float* workspace, std::size_t floats) override {
    inner_->set_gemm_workspace(workspace, floats);
  }
  void add_bias(Stream& s, View out, CView bias, int rows, int cols) override;
  void bias_backward(Stream& s, float* dbias, CView dout, int rows, int cols) override;
  void encoder_forward(Stream& s, View out, const std::int32_t* tokens, CView wte, CView wpe, int B, int T,
                       int C) override;
  void encoder_backward(Stream& s, float* dwte, float* dwpe, CView dout, const std::int32_t* tokens, int B, int T,
                        int C) override;
  void layernorm_forward(Stream& s, View out, float* mean, float* rstd, CView inp, CView w, CView b, int N,
                         int C) override;
  void layernorm_backward(Stream& s, View dinp, float* dw, float* db, CView dout, CView inp, CView w,
                          const float* mean, const float* rstd, int N, int C) override;
  void gelu_forward(Stream& s, View out, CView inp, std::size_t n) override;
  void gelu_backward(Stream& s, View dinp, CView inp, CView dout, std::size_t n) override;
  using Backend::attention_backward;
  using Backend::attention_forward;
  void attention_forward(Stream& s, View out, float* saved, float* scratch, CView qkv, const AttentionShape& a) override;
  void attention_backward(Stream& s, View dqkv, float* scratch, CView dout, CView qkv, CView out, const float* saved,
                          const AttentionShape& a) override;
  void rmsnorm_forward(Stream& s, View out, float* rstd, CView inp, CView w, int N, int C, float eps) override;
  void rmsnorm_backward(Stream& s, View dinp, float* dw, CView dout, CView inp, CView w, const float* rstd, int N,
                        int C) override;
  void rope(Stream& s, View x, const float* table, int N, int T, int heads, int hd, int stride, bool inverse) override;
  void swiglu_forward(Stream& s, View out, CView gate_up, int N, int I) override;
  void swiglu_backward(Stream& s, View dgate_up, CView gate_up, CView dout, int N, int I) override;
  void add(Stream& s, View out, CView a, CView b, std::size_t n) override;
  void axpy(Stream& s, float* y, float alpha, const float* x, std::size_t n) override;
  void softmax_xent(Stream& s, float* losses, View logits, const std::int32_t* targets, int N, int V, int Vp,
                    float dloss) override;
  void cast(Stream& s, void* dst, DType dst_type, const void* src, DType src_type, std::size_t n) override;
  void fill(Stream& s, View x, float value, std::size_t n) override;
  void sum(Stream& s, double* acc, const float* x, std::size_t n) override;
  void sum(Stream& s, double* acc, const double* x, std::size_t n) override;
  void sum_squares(Stream& s, double* acc, const float* x, std::size_t n) override;
  void check_finite(Stream& s, double* acc, const float* x, std::size_t n) override;
  void adamw(Stream& s, float* p, float* m, float* v, const float* g, std::size_t n, const AdamStep& step,
             void* working, DType working_type) override;
  void adamw_compressed(Stream& s, const AdamStep& step, const CompressedStates& st, const float* g, std::size_t n,
                        const ShardPosition& at) override;
  void copy_async(Stream& s, void* dst, const void* src, std::size_t bytes) override;
  void memset_async(Stream& s, void* dst, int value, std::size_t bytes) override;

 private:
  // Runs f; with a profile attached, between a pair of events on s, under `name` with `cost`.
  template <typename F>
  void timed(Stream& s, const char* name, OpCost cost, F&& f);

  std::unique_ptr<Backend> inner_;
  OpProfile* profile_ = nullptr;
};

}  // namespace tz
