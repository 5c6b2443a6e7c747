// A second model family for tests, registered under the name "test-gpt" with one preset, "test-tiny"
// (the tiny preset's shape). Its math is GPT-2's, so it trains bitwise like GPT-2; what it changes is what
// only a family may say: its description, its FLOPs per token (twice GPT-2's), its Hugging Face names
// ("test." before GPT-2's own) and one buffer more (kTestScratchBytes of device memory its model takes).
// A run that plans, allocates, reports or checkpoints through the family interface shows each of them;
// one that asked GPT-2 directly would not.
#pragma once

#include <memory>

#include "model/model_family.h"

namespace tz::testing {

inline constexpr const char* kTestFamily = "test-gpt";
inline constexpr const char* kTestScratch = "test family scratch";
inline constexpr std::size_t kTestScratchBytes = 4096;

class TestGptFamily : public ModelFamily {
 public:
  std::string name() const override { return kTestFamily; }
  std::vector<std::string> preset_names() const override { return {"test-tiny"}; }
  ModelConfig preset(const std::string&) const override {
    ModelConfig c = gpt().preset("tiny");
    c.family = kTestFamily;
    return c;
  }
  void validate(const ModelConfig& c) const override { gpt().validate(as_gpt(c)); }
  std::size_t num_parameters(const ModelConfig& c) const override { return gpt().num_parameters(as_gpt(c)); }
  std::size_t num_parameters_unpadded(const ModelConfig& c) const override {
    return gpt().num_parameters_unpadded(as_gpt(c));
  }
  std::string describe(const ModelConfig& c) const override { return "test-gpt, " + gpt().describe(as_gpt(c)); }
  ParamLayout layout(const ModelConfig& c) const override {
    ParamLayout l = gpt().layout(as_gpt(c));
    for (GroupSpec& g : l.groups)
      for (TensorSpec& t : g.tensors) t.hf_name = "test." + t.hf_name;
    return l;
  }
  std::vector<int> gradient_order(const ParamLayout& l) const override { return gpt().gradient_order(l); }
  std::vector<BufferSpec> buffers(const ModelConfig& c, ModelShape s, Precision dt, ActivationCheckpointing ckpt,
                                  MemoryKind kind, DeviceKind device) const override {
    std::vector<BufferSpec> v = gpt().buffers(as_gpt(c), s, dt, ckpt, kind, device);
    v.push_back({kTestScratch, "activations and scratch", MemoryKind::device, kTestScratchBytes});
    return v;
  }
  std::vector<GemmShape> gemm_shapes(const ModelConfig& c, ModelShape s, DType act) const override {
    return gpt().gemm_shapes(as_gpt(c), s, act);
  }
  double activation_bytes_bound(const ModelConfig& c, ModelShape s) const override {
    return gpt().activation_bytes_bound(as_gpt(c), s) + kTestScratchBytes;
  }
  double flops_per_token(const ModelConfig& c, int T) const override {
    return 2 * gpt().flops_per_token(as_gpt(c), T);
  }
  std::string flops_formula() const override { return "twice GPT-2's"; }
  void init_group(const ModelConfig& c, const ParamLayout& l, std::uint64_t seed, int g,
                  std::vector<float>& values) const override {
    gpt().init_group(as_gpt(c), l, seed, g, values);
  }
  std::unique_ptr<Model> make(Device& dev, const ModelConfig& c, ModelShape s, Precision dt, ActivationCheckpointing ckpt,
                              PlannedBuffers& planned, MemoryKind kind) const override {
    return std::make_unique<Wrapped>(c, gpt().make(dev, as_gpt(c), s, dt, ckpt, planned, kind),
                                     planned.take<std::uint8_t>(kTestScratch));
  }
  ModelConfig config_from_safetensors(const std::string& path, int n_head) const override {
    ModelConfig c = gpt().config_from_safetensors(path, n_head);
    c.family = kTestFamily;
    return c;
  }
  void load_safetensors(const std::string& path, const ParamLayout& l, std::vector<std::vector<float>>& groups,
                        const SeenBytes& seen) const override {
    gpt().load_safetensors(path, l, groups, seen);
  }
  void save_safetensors(const std::string& path, const ParamLayout& l, const std::vector<const float*>& groups,
                        DType dtype) const override {
    gpt().save_safetensors(path, l, groups, dtype);
  }

 private:
  // GPT-2's model under this family's config, with the extra buffer held for as long as it lives.
  class Wrapped final : public Model {
   public:
    Wrapped(const ModelConfig& c, std::unique_ptr<Model> inner, Buffer<std::uint8_t> scratch)
        : cfg_(c), inner_(std::move(inner)), scratch_(std::move(scratch)) {}
    const ModelConfig& config() const override { return cfg_; }
    const ParamLayout& layout() const override { return inner_->layout(); }
    ModelShape shape() const override { return inner_->shape(); }
    std::size_t activation_bytes() const override { return inner_->activation_bytes() + scratch_.bytes(); }
    std::size_t offloaded_checkpoint_bytes() const override { return inner_->offloaded_checkpoint_bytes(); }
    void forward(ParamProvider& p, const std::int32_t* in, const std::int32_t* tgt, float scale, double* loss,
                 Stream& s) override {
      inner_->forward(p, in, tgt, scale, loss, s);
    }
    void backward(ParamProvider& p, Stream& s) override { inner_->backward(p, s); }

   private:
    ModelConfig cfg_;
    std::unique_ptr<Model> inner_;
    Buffer<std::uint8_t> scratch_;
  };

  static const ModelFamily& gpt() { return model_family("gpt2"); }
  static ModelConfig as_gpt(ModelConfig c) {
    c.family = "gpt2";
    return c;
  }
};

// Registers the family once per process.
inline void register_test_family() {
  static const bool once = [] {
    register_model_family(std::make_unique<TestGptFamily>());
    return true;
  }();
  (void)once;
}

}  // namespace tz::testing
