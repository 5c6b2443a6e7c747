// GPT-2's family record: each question answered from GPT-2's own files (gpt.h, gpt_layout.h, gpt_init.h,
// gpt_safetensors.h) and its presets as Hugging Face defines them, plus a tiny one for tests.
#include "model/gpt_family.h"

#include <string>

#include "core/error.h"
#include "model/gpt.h"
#include "model/gpt_init.h"
#include "model/gpt_layout.h"
#include "model/gpt_safetensors.h"
#include "model/hf_config_fields.h"
#include "model/hf_folder.h"

namespace tz {
namespace {

class Gpt2Family final : public ModelFamily {
 public:
  std::string name() const override { return "gpt2"; }

  std::vector<std::string> preset_names() const override {
    return {"tiny", "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"};
  }

  ModelConfig preset(const std::string& name) const override {
    ModelConfig c;
    c.family = "gpt2";
    if (name == "tiny") {
      c.n_layer = 2, c.n_head = 4, c.n_embd = 64, c.vocab_size = 256, c.max_seq_len = 64;
    } else if (name == "gpt2") {
      c.n_layer = 12, c.n_head = 12, c.n_embd = 768;
    } else if (name == "gpt2-medium") {
      c.n_layer = 24, c.n_head = 16, c.n_embd = 1024;
    } else if (name == "gpt2-large") {
      c.n_layer = 36, c.n_head = 20, c.n_embd = 1280;
    } else if (name == "gpt2-xl") {
      c.n_layer = 48, c.n_head = 25, c.n_embd = 1600;
    } else {
      TZ_FAIL("unknown GPT-2 preset '", name, "'");
    }
    c.padded_vocab_size = ModelConfig::pad_vocab(c.vocab_size);
    return c;
  }

  void validate(const ModelConfig& c) const override {
    TZ_CHECK(c.n_layer >= 1 && c.n_layer <= kMaxLayers, "n_layer (--n-layer) must be in [1, ", kMaxLayers,
             "], got ", c.n_layer);
    TZ_CHECK(c.n_head >= 1 && c.n_head <= kMaxWidth, "n_head (--n-head) must be in [1, ", kMaxWidth, "], got ",
             c.n_head);
    TZ_CHECK(c.n_embd >= 1 && c.n_embd <= kMaxWidth, "n_embd (--n-embd) must be in [1, ", kMaxWidth, "], got ",
             c.n_embd);
    TZ_CHECK(c.n_embd % c.n_head == 0, "n_embd (", c.n_embd, ") must be a positive multiple of n_head (", c.n_head,
             ")");
    TZ_CHECK(c.vocab_size >= 2 && c.vocab_size <= kMaxVocab, "vocab (--vocab) must be in [2, ", kMaxVocab,
             "], got ", c.vocab_size);
    TZ_CHECK(c.padded_vocab_size >= c.vocab_size, "padded vocab (", c.padded_vocab_size,
             ") is smaller than vocab (", c.vocab_size, ")");
    TZ_CHECK(c.max_seq_len >= 1 && c.max_seq_len <= kMaxSeqLen, "seq-len (--seq-len) must be in [1, ", kMaxSeqLen,
             "], got ", c.max_seq_len);
  }

  std::size_t num_parameters(const ModelConfig& c) const override {
    const std::size_t C = c.n_embd, L = c.n_layer;
    const std::size_t block =
        2 * C + (C * 3 * C + 3 * C) + (C * C + C) + 2 * C + (C * 4 * C + 4 * C) + (4 * C * C + C);
    return std::size_t(c.padded_vocab_size) * C + std::size_t(c.max_seq_len) * C + L * block + 2 * C;
  }

  std::size_t num_parameters_unpadded(const ModelConfig& c) const override {
    return num_parameters(c) - std::size_t(c.padded_vocab_size - c.vocab_size) * c.n_embd;
  }

  std::string describe(const ModelConfig& c) const override {
    return std::to_string(c.n_layer) + " layers, " + std::to_string(c.n_head) + " heads, " +
           std::to_string(c.n_embd) + " wide, vocab " + std::to_string(c.vocab_size) + " (padded " +
           std::to_string(c.padded_vocab_size) + "), " + std::to_string(c.max_seq_len) + " positions";
  }

  ParamLayout layout(const ModelConfig& c) const override { return gpt_layout(c); }

  std::vector<int> gradient_order(const ParamLayout& layout) const override { return Gpt::gradient_order(layout); }

  std::vector<BufferSpec> buffers(const ModelConfig& c, ModelShape s, Precision dt, ActivationCheckpointing ckpt,
                                  MemoryKind ckpt_kind, DeviceKind device) const override {
    return Gpt::buffers(c, s, dt, ckpt, ckpt_kind, device);
  }

  // Every block's set kept, attention probabilities of T x T per head, logits and their low-precision
  // copies, all in 8-byte words.
  std::vector<GemmShape> gemm_shapes(const ModelConfig& c, ModelShape s, DType act) const override {
    return Gpt::gemm_shapes(c, s, act);
  }
  double activation_bytes_bound(const ModelConfig& c, ModelShape s) const override {
    const double L = c.n_layer, C = c.n_embd, H = c.n_head, V = c.padded_vocab_size, B = s.B, T = s.T;
    return 8 * ((L + 2) * (B * T * (32 * C + 8) + B * H * T * T) + 3 * B * T * V);
  }

  // The products read every parameter but the position table (the LM head's runs over the padded
  // vocabulary rows, so they count): 6 FLOPs per parameter per token forward and backward, and attention's
  // 12 x layers x width x T.
  double flops_per_token(const ModelConfig& c, int T) const override {
    const double N = double(c.num_parameters()) - double(c.max_seq_len) * c.n_embd;
    return 6.0 * N + 12.0 * c.n_layer * c.n_embd * T;
  }

  std::string flops_formula() const override {
    return "6 * N + 12 * n_layer * n_embd * seq_len per token, N = params excluding wpe";
  }

  void init_group(const ModelConfig& c, const ParamLayout& layout, std::uint64_t seed, int g,
                  std::vector<float>& values) const override {
    init_gpt_group(c, layout, seed, g, values);
  }

  std::unique_ptr<Model> make(Device& dev, const ModelConfig& c, ModelShape s, Precision dt,
                              ActivationCheckpointing ckpt, PlannedBuffers& planned,
                              MemoryKind ckpt_kind) const override {
    return std::make_unique<Gpt>(dev, c, s, dt, ckpt, planned, ckpt_kind);
  }

  std::vector<std::string> hf_architectures() const override { return {"GPT2LMHeadModel"}; }

  // transformers' GPT2Config, with its defaults; what this GPT-2 hard-wires must match.
  ModelConfig config_from_hf(const nlohmann::json& j, const std::string& source) const override {
    const HfFields f(j, source);
    ModelConfig c;
    c.n_layer = f.integer("n_layer", 12, 1, kMaxLayers);
    c.n_head = f.integer("n_head", 12, 1, kMaxWidth);
    c.n_embd = f.integer("n_embd", 768, 1, kMaxWidth);
    c.vocab_size = f.integer("vocab_size", 50257, 2, kMaxVocab);
    c.padded_vocab_size = ModelConfig::pad_vocab(c.vocab_size);
    c.max_seq_len = f.integer("n_positions", 1024, 1, kMaxSeqLen);
    const std::string act = f.text("activation_function", "gelu_new");
    TZ_CHECK(act == "gelu_new" || act == "gelu_pytorch_tanh", source, ": \"activation_function\" is '", act,
             "'; GPT-2 here is built with the tanh GELU (gelu_new)");
    TZ_CHECK(f.number("layer_norm_epsilon", 1e-5) == 1e-5, source, ": \"layer_norm_epsilon\" must be 1e-05");
    TZ_CHECK(f.integer("n_inner", 4 * c.n_embd, 1, 4 * kMaxWidth) == 4 * c.n_embd, source,
             ": \"n_inner\" must be 4 x n_embd (", 4 * c.n_embd, ")");
    TZ_CHECK(f.boolean("tie_word_embeddings", true), source, ": GPT-2 here ties its head to wte");
    return c;
  }

  // GPT2Config's fields as transformers writes them; dropout 0 (this GPT-2 trains without it).
  nlohmann::json hf_config(const ModelConfig& c) const override {
    return {{"architectures", {"GPT2LMHeadModel"}},
            {"model_type", "gpt2"},
            {"n_layer", c.n_layer},
            {"n_head", c.n_head},
            {"n_embd", c.n_embd},
            {"n_inner", nullptr},
            {"n_positions", c.max_seq_len},
            {"n_ctx", c.max_seq_len},
            {"vocab_size", c.vocab_size},
            {"activation_function", "gelu_new"},
            {"layer_norm_epsilon", 1e-5},
            {"initializer_range", 0.02},
            {"attn_pdrop", 0.0},
            {"embd_pdrop", 0.0},
            {"resid_pdrop", 0.0},
            {"scale_attn_weights", true},
            {"tie_word_embeddings", true}};
  }

  // A folder's config.json gives every size. n_head is not in a GPT-2 file: 0 takes the preset's of the
  // same depth and width.
  ModelConfig config_from_safetensors(const std::string& path, int n_head) const override {
    if (is_hf_folder(path)) return read_hf_config(path);
    if (n_head == 0) {
      const ModelConfig file = infer_gpt_config_from_safetensors(path, 1);
      for (const std::string& name : preset_names()) {
        const ModelConfig p = preset(name);
        if (!n_head && p.n_embd == file.n_embd && p.n_layer == file.n_layer) n_head = p.n_head;
      }
      TZ_CHECK(n_head != 0, path, " has ", file.n_layer, " layers of width ", file.n_embd,
               ", which matches no GPT-2 preset: give its head count with --n-head");
    }
    return infer_gpt_config_from_safetensors(path, n_head);
  }

  void load_safetensors(const std::string& path, const ParamLayout& layout, std::vector<std::vector<float>>& groups,
                        const SeenBytes& seen) const override {
    if (!is_hf_folder(path)) return load_gpt_safetensors(path, layout, groups, seen);
    const HfWeightFiles w = hf_weight_files(path);
    TZ_CHECK(w.files.size() == 1 && w.index.empty(), path,
             " is sharded: GPT-2 folders are read from one model.safetensors (save with a larger max_shard_size)");
    load_gpt_safetensors(w.files[0], layout, groups, seen);
  }

  void save_safetensors(const std::string& path, const ParamLayout& layout, const std::vector<const float*>& groups,
                        DType dtype) const override {
    save_gpt_safetensors(path, layout, groups, dtype);
  }
};

}  // namespace

std::unique_ptr<ModelFamily> make_gpt2_family() { return std::make_unique<Gpt2Family>(); }

}  // namespace tz
