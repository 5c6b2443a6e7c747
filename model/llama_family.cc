// The Llama family's record. Presets are the published config.json values of each model.
#include "model/llama_family.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/backend.h"
#include "core/error.h"
#include "model/hf_config_fields.h"
#include "model/hf_folder.h"
#include "model/layout_safetensors.h"
#include "model/llama.h"
#include "model/llama_layout.h"
#include "model/seeded_normal.h"

namespace tz {
namespace {


struct Preset {
  const char* name;
  int layers, heads, kv_heads, width, head_dim, ffn, vocab, positions;
  double theta, eps, rope_factor;  // rope_factor 0: no rope_scaling
  bool tied, qkv_bias;
};

// Llama 3.1 and 3.2 (rope_scaling "llama3": low 1, high 4, original 8192), Qwen2.5 (q/k/v biases), and
// Mistral-7B-v0.3 (no sliding window); llama-tiny for tests.
constexpr Preset kPresets[] = {
    {"llama-tiny", 2, 4, 2, 64, 16, 160, 256, 64, 10000, 1e-5, 0, false, false},
    {"llama3.2-1b", 16, 32, 8, 2048, 64, 8192, 128256, 131072, 500000, 1e-5, 32, true, false},
    {"llama3.2-3b", 28, 24, 8, 3072, 128, 8192, 128256, 131072, 500000, 1e-5, 32, true, false},
    {"llama3.1-8b", 32, 32, 8, 4096, 128, 14336, 128256, 131072, 500000, 1e-5, 8, false, false},
    {"llama3.1-70b", 80, 64, 8, 8192, 128, 28672, 128256, 131072, 500000, 1e-5, 8, false, false},
    {"qwen2.5-0.5b", 24, 14, 2, 896, 64, 4864, 151936, 32768, 1000000, 1e-6, 0, true, true},
    {"qwen2.5-7b", 28, 28, 4, 3584, 128, 18944, 152064, 131072, 1000000, 1e-6, 0, false, true},
    {"mistral-7b", 32, 32, 8, 4096, 128, 14336, 32768, 32768, 1000000, 1e-5, 0, false, false},
};

class LlamaFamily final : public ModelFamily {
 public:
  std::string name() const override { return "llama"; }

  std::vector<std::string> preset_names() const override {
    std::vector<std::string> v;
    for (const Preset& p : kPresets) v.push_back(p.name);
    return v;
  }

  ModelConfig preset(const std::string& name) const override {
    for (const Preset& p : kPresets) {
      if (name != p.name) continue;
      ModelConfig c;
      c.family = "llama";
      c.n_layer = p.layers, c.n_head = p.heads, c.n_kv_head = p.kv_heads, c.n_embd = p.width;
      c.head_dim = p.head_dim, c.ffn_dim = p.ffn, c.vocab_size = p.vocab, c.max_seq_len = p.positions;
      c.padded_vocab_size = ModelConfig::pad_vocab(p.vocab);
      c.rope_theta = p.theta, c.norm_eps = p.eps, c.tied_head = p.tied, c.qkv_bias = p.qkv_bias;
      if (p.rope_factor > 0)
        c.rope_factor = p.rope_factor, c.rope_low_freq_factor = 1, c.rope_high_freq_factor = 4,
        c.rope_original_max_seq_len = 8192;
      return c;
    }
    TZ_FAIL("unknown Llama-family preset '", name, "'");
  }

  void validate(const ModelConfig& c) const override {
    auto in = [](int v, int lo, int hi) { return v >= lo && v <= hi; };
    TZ_CHECK(in(c.n_layer, 1, kMaxLayers), "n_layer (--n-layer) must be in [1, ", kMaxLayers, "], got ", c.n_layer);
    TZ_CHECK(in(c.n_embd, 1, kMaxWidth), "n_embd (--n-embd) must be in [1, ", kMaxWidth, "], got ", c.n_embd);
    TZ_CHECK(in(c.n_head, 1, kMaxWidth), "n_head (--n-head) must be in [1, ", kMaxWidth, "], got ", c.n_head);
    const LlamaDims d = LlamaDims::of(c);  // 0 for the key-value heads or head_dim: Hugging Face's defaults
    TZ_CHECK(in(d.KV, 1, c.n_head) && c.n_head % d.KV == 0, "num_key_value_heads (", d.KV,
             ") must divide num_attention_heads (", c.n_head, ")");
    TZ_CHECK(in(d.hd, 2, kMaxWidth) && d.hd % 2 == 0 && std::size_t(d.hd) * c.n_head <= 4u * kMaxWidth, "head_dim (",
             d.hd, ") must be even, at least 2, and with num_attention_heads (", c.n_head, ") at most ",
             4 * kMaxWidth, " wide");
    TZ_CHECK(in(c.ffn_dim, 1, 4 * kMaxWidth), "intermediate_size (", c.ffn_dim, ") must be in [1, ", 4 * kMaxWidth, "]");
    TZ_CHECK(in(c.vocab_size, 2, kMaxVocab), "vocab (--vocab) must be in [2, ", kMaxVocab, "], got ", c.vocab_size);
    TZ_CHECK(c.padded_vocab_size >= c.vocab_size, "padded vocab (", c.padded_vocab_size, ") is smaller than vocab (",
             c.vocab_size, ")");
    TZ_CHECK(in(c.max_seq_len, 1, kMaxSeqLen), "seq-len (--seq-len) must be in [1, ", kMaxSeqLen, "], got ",
             c.max_seq_len);
    TZ_CHECK(std::isfinite(c.norm_eps) && c.norm_eps > 0, "rms_norm_eps must be a positive number, got ", c.norm_eps);
    TZ_CHECK(std::isfinite(c.rope_theta) && c.rope_theta > 0, "rope_theta must be a positive number, got ",
             c.rope_theta);
    if (c.rope_factor != 0)
      TZ_CHECK(std::isfinite(c.rope_factor) && c.rope_factor >= 1 && c.rope_low_freq_factor > 0 &&
                   c.rope_high_freq_factor > c.rope_low_freq_factor && c.rope_original_max_seq_len >= 1,
               "rope_scaling (llama3): factor ", c.rope_factor, ", low_freq_factor ", c.rope_low_freq_factor,
               ", high_freq_factor ", c.rope_high_freq_factor, ", original_max_position_embeddings ",
               c.rope_original_max_seq_len, " must have factor >= 1, 0 < low < high and a positive original length");
  }

  std::size_t num_parameters(const ModelConfig& c) const override { return count(c, c.padded_vocab_size); }
  std::size_t num_parameters_unpadded(const ModelConfig& c) const override { return count(c, c.vocab_size); }

  std::string describe(const ModelConfig& c) const override {
    char rope[96] = "";
    if (c.rope_factor > 0) std::snprintf(rope, sizeof rope, " (llama3 x%g)", c.rope_factor);
    if (c.sliding_window > 0)
      std::snprintf(rope + std::strlen(rope), sizeof rope - std::strlen(rope), ", window %d", c.sliding_window);
    char b[384];
    std::snprintf(b, sizeof b,
                  "llama: %d layers, %d heads (%d key-value) of %d, %d wide, ffn %d, vocab %d (padded %d), %d "
                  "positions, %s head%s%s%s, rope theta %g%s, rms eps %g",
                  c.n_layer, c.n_head, c.n_kv_head, c.head_dim, c.n_embd, c.ffn_dim, c.vocab_size,
                  c.padded_vocab_size, c.max_seq_len, c.tied_head ? "tied" : "untied", c.qkv_bias ? ", qkv bias" : "",
                  c.o_bias ? ", o bias" : "", c.mlp_bias ? ", mlp bias" : "", c.rope_theta, rope, c.norm_eps);
    return b;
  }

  ParamLayout layout(const ModelConfig& c) const override { return llama_layout(c); }
  std::vector<int> gradient_order(const ParamLayout& layout) const override { return layout.backward_order(); }

  std::vector<BufferSpec> buffers(const ModelConfig& c, ModelShape s, Precision dt, ActivationCheckpointing ckpt,
                                  MemoryKind ckpt_kind, DeviceKind device) const override {
    return Llama::buffers(c, s, dt, ckpt, ckpt_kind, device);
  }

  std::vector<GemmShape> gemm_shapes(const ModelConfig& c, ModelShape s, DType act) const override {
    return Llama::gemm_shapes(c, s, act);
  }
  double activation_bytes_bound(const ModelConfig& c, ModelShape s) const override {
    const LlamaDims d = LlamaDims::of(c);
    const double L = c.n_layer, C = d.C, Q = double(d.H) * d.hd, I = d.I, H = d.H, V = c.padded_vocab_size;
    const double B = s.B, T = s.T;
    return 8 * ((L + 2) * (B * T * (8 * C + 8 * Q + 6 * I + 8) + 2 * B * H * T * T) + 3 * B * T * V);
  }

  // 6 per parameter the products read (every block matrix, and the head: the tied embedding, or lm_head;
  // the untied embedding is a lookup), and attention's 12 x layers x heads x head_dim x T.
  double flops_per_token(const ModelConfig& c, int T) const override {
    const LlamaDims d = LlamaDims::of(c);
    const double lookup = c.tied_head ? 0.0 : double(c.padded_vocab_size) * d.C;
    const double N = double(c.num_parameters()) - lookup;
    return 6.0 * N + 12.0 * c.n_layer * double(d.H) * d.hd * T;
  }

  std::string flops_formula() const override {
    return "6 * N + 12 * n_layer * n_head * head_dim * seq_len per token, N = params excluding an untied "
           "embedding (a lookup)";
  }

  // Hugging Face's LlamaPreTrainedModel: every matrix and the embeddings ~ N(0, 0.02) (padded vocabulary
  // rows 0), biases 0, RMSNorm weights 1.
  void init_group(const ModelConfig& c, const ParamLayout& layout, std::uint64_t seed, int g,
                  std::vector<float>& values) const override {
    values.assign(layout.groups[g].count, 0.0f);
    for (const TensorSpec& t : layout.groups[g].tensors) {
      float* p = values.data() + t.offset;
      if (t.shape.size() == 1) {
        if (!t.name.ends_with(".bias"))
          for (std::size_t i = 0; i < t.count; ++i) p[i] = 1.0f;
        continue;
      }
      const std::uint64_t h = tensor_stream(seed, t.name);
      std::size_t n = 1;
      for (auto dim : t.hf_shape) n *= std::size_t(dim);  // the embeddings' padded rows stay 0
#pragma omp parallel for schedule(static)
      for (std::size_t i = 0; i < n; ++i) p[i] = float(normal_at(h, i) * 0.02);
    }
  }

  std::unique_ptr<Model> make(Device& dev, const ModelConfig& c, ModelShape s, Precision dt, ActivationCheckpointing ckpt,
                              PlannedBuffers& planned, MemoryKind ckpt_kind) const override {
    return std::make_unique<Llama>(dev, c, s, dt, ckpt, planned, ckpt_kind);
  }
  std::vector<std::string> hf_architectures() const override {
    return {"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"};
  }

  // transformers' LlamaConfig, MistralConfig and Qwen2Config, with their defaults for absent fields.
  ModelConfig config_from_hf(const nlohmann::json& j, const std::string& source) const override {
    const HfFields f(j, source);
    const std::string arch = j.at("architectures")[0].get<std::string>();
    const bool qwen2 = arch == "Qwen2ForCausalLM", mistral = arch == "MistralForCausalLM";
    TZ_CHECK(!f.has("quantization_config"), source, ": \"quantization_config\": quantized weights are not read");
    const std::string act = f.text("hidden_act", "silu");
    TZ_CHECK(act == "silu", source, ": \"hidden_act\" is '", act, "'; only silu (SwiGLU) is built");
    ModelConfig c;
    c.family = "llama";
    c.n_layer = f.integer("num_hidden_layers", 32, 1, kMaxLayers);
    c.n_head = f.integer("num_attention_heads", 32, 1, kMaxWidth);
    c.n_kv_head = f.integer("num_key_value_heads", c.n_head, 1, kMaxWidth);
    c.n_embd = f.integer("hidden_size", 4096, 1, kMaxWidth);
    c.head_dim = f.integer("head_dim", c.n_embd / c.n_head, 1, kMaxWidth);
    c.ffn_dim = f.integer("intermediate_size", 11008, 1, 4 * kMaxWidth);
    c.vocab_size = f.integer("vocab_size", 32000, 2, kMaxVocab);
    c.padded_vocab_size = ModelConfig::pad_vocab(c.vocab_size);
    c.max_seq_len = f.integer("max_position_embeddings", 2048, 1, kMaxSeqLen);
    c.norm_eps = f.number("rms_norm_eps", 1e-6);
    c.tied_head = f.boolean("tie_word_embeddings", false);
    c.qkv_bias = qwen2 || f.boolean("attention_bias", false);  // Qwen2's q/k/v always have biases
    c.o_bias = !qwen2 && f.boolean("attention_bias", false);
    c.mlp_bias = f.boolean("mlp_bias", false);
    if (mistral || (qwen2 && f.boolean("use_sliding_window", false)))
      c.sliding_window = f.integer("sliding_window", 0, 0, kMaxSeqLen);
    // transformers 5 keeps theta and the scaling in "rope_parameters"; 4.x in "rope_theta" and "rope_scaling".
    const HfFields rp = f.object("rope_parameters");
    const HfFields rs = f.has("rope_parameters") ? rp : f.object("rope_scaling");
    c.rope_theta = f.has("rope_parameters") ? rp.number("rope_theta", 10000) : f.number("rope_theta", 10000);
    const std::string type = rs.text("rope_type", rs.text("type", "default"));
    if (type == "llama3") {
      c.rope_factor = rs.number("factor", 8);
      c.rope_low_freq_factor = rs.number("low_freq_factor", 1);
      c.rope_high_freq_factor = rs.number("high_freq_factor", 4);
      c.rope_original_max_seq_len = rs.integer("original_max_position_embeddings", 8192, 1, kMaxSeqLen);
    } else {
      TZ_CHECK(type == "default", source, ": rope scaling of type '", type,
               "' is not built (default and llama3 are)");
    }
    return c;
  }

  // The architecture that holds the shape: Qwen2 (q/k/v biases alone), Mistral (a sliding window), else
  // Llama (attention_bias: q, k, v and o biases together; mlp_bias).
  nlohmann::json hf_config(const ModelConfig& c) const override {
    const LlamaDims d = LlamaDims::of(c);
    const bool qwen2 = c.qkv_bias && !c.o_bias;
    TZ_CHECK(!qwen2 || !c.mlp_bias, "a model with q/k/v biases but no o bias (Qwen2) and MLP biases has no "
             "Hugging Face architecture; it cannot be saved as a folder");
    TZ_CHECK(c.qkv_bias || !c.o_bias, "a model with an o bias but no q/k/v biases has no Hugging Face "
             "architecture; it cannot be saved as a folder");
    const bool mistral = !qwen2 && c.sliding_window > 0 && !c.qkv_bias && !c.mlp_bias;
    nlohmann::json j = {
        {"architectures", {qwen2 ? "Qwen2ForCausalLM" : mistral ? "MistralForCausalLM" : "LlamaForCausalLM"}},
        {"model_type", qwen2 ? "qwen2" : mistral ? "mistral" : "llama"},
        {"num_hidden_layers", c.n_layer},
        {"num_attention_heads", c.n_head},
        {"num_key_value_heads", d.KV},
        {"hidden_size", c.n_embd},
        {"head_dim", d.hd},
        {"intermediate_size", d.I},
        {"vocab_size", c.vocab_size},
        {"max_position_embeddings", c.max_seq_len},
        {"rms_norm_eps", c.norm_eps},
        {"rope_theta", c.rope_theta},
        {"rope_scaling", nullptr},
        {"hidden_act", "silu"},
        {"initializer_range", 0.02},
        {"attention_dropout", 0.0},
        {"tie_word_embeddings", c.tied_head},
        {"use_cache", true}};
    if (c.rope_factor > 0)
      j["rope_scaling"] = {{"rope_type", "llama3"},
                           {"factor", c.rope_factor},
                           {"low_freq_factor", c.rope_low_freq_factor},
                           {"high_freq_factor", c.rope_high_freq_factor},
                           {"original_max_position_embeddings", c.rope_original_max_seq_len}};
    if (qwen2) {
      j["use_sliding_window"] = c.sliding_window > 0;
      j["sliding_window"] = c.sliding_window > 0 ? nlohmann::json(c.sliding_window) : nlohmann::json(nullptr);
      j["max_window_layers"] = c.n_layer;
    } else if (mistral) {
      j["sliding_window"] = c.sliding_window;
    } else {
      TZ_CHECK(c.sliding_window == 0, "a Llama model with MLP or attention biases and a sliding window has no "
               "Hugging Face architecture; it cannot be saved as a folder");
      j["attention_bias"] = c.qkv_bias;
      j["mlp_bias"] = c.mlp_bias;
    }
    return j;
  }

  // A folder's config.json; a bare file says nothing of heads, biases or RoPE.
  ModelConfig config_from_safetensors(const std::string& path, int) const override {
    TZ_CHECK(is_hf_folder(path), path, " is a file: a Llama-family model is read from its Hugging Face folder "
             "(config.json beside model.safetensors); give the folder");
    return read_hf_config(path);
  }

  // By Hugging Face's names from the folder's file or shards; old checkpoints' RoPE buffers are skipped and
  // a tied model's lm_head.weight, when saved, must be the embedding.
  void load_safetensors(const std::string& path, const ParamLayout& layout, std::vector<std::vector<float>>& groups,
                        const SeenBytes& seen) const override {
    load_hf_tensors(path, layout, groups, seen, {".rotary_emb.inv_freq"}, ties(layout));
  }

  // Streamed: one group's fp32 values at a time (an 8B model is 32 GB in fp32).
  std::unique_ptr<WeightSource> open_weights(const std::string& path, const ParamLayout& layout,
                                             const SeenBytes& seen) const override {
    return std::make_unique<HfWeightReader>(path, layout, seen, std::vector<std::string>{".rotary_emb.inv_freq"},
                                            ties(layout));
  }

  // Hugging Face's names and [out, in] matrices are the layout's own: the file is the layout's tensors.
  void save_safetensors(const std::string& path, const ParamLayout& layout, const std::vector<const float*>& groups,
                        DType dtype) const override {
    save_layout_safetensors(path, layout, groups, dtype, "Llama-family weights");
  }

 private:
  static std::vector<HfTie> ties(const ParamLayout& layout) {
    if (layout.find("lm_head.weight") != nullptr) return {};
    return {{"lm_head.weight", "model.embed_tokens.weight"}};
  }
  static std::size_t count(const ModelConfig& c, int vocab_rows) {
    const LlamaDims d = LlamaDims::of(c);
    const std::size_t C = d.C, Q = std::size_t(d.H) * d.hd, KV = std::size_t(d.KV) * d.hd, I = d.I;
    const std::size_t block = 2 * C + C * Q + 2 * C * KV + Q * C + 3 * C * I + (c.qkv_bias ? Q + 2 * KV : 0) +
                              (c.o_bias ? C : 0) + (c.mlp_bias ? 2 * I + C : 0);
    return std::size_t(vocab_rows) * C * (c.tied_head ? 1 : 2) + std::size_t(c.n_layer) * block + C;
  }

};

}  // namespace

std::unique_ptr<ModelFamily> make_llama_family() { return std::make_unique<LlamaFamily>(); }

}  // namespace tz
