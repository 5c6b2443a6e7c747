// Model families as data: everything the planner, the engine, the loop, the checkpoints and the reports
// may know of a model, one record per family (Hugging Face's split of config, weights and modelling is
// the model). GPT-2 is built in; a new family (or a test) registers one with register_model_family, and
// nothing above model/ names a family.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/buffer_plan.h"
#include "core/device.h"
#include "model/activation_checkpoints.h"
#include "model/model.h"
#include "model/safetensors_format.h"
#include "model/weight_source.h"

namespace tz {

class ModelFamily {
 public:
  virtual ~ModelFamily() = default;

  // What ModelConfig::family holds for this family ("gpt2").
  virtual std::string name() const = 0;

  // Presets by name; a family's preset names are its own (model_preset refuses a name two families use).
  virtual std::vector<std::string> preset_names() const = 0;
  virtual ModelConfig preset(const std::string& name) const = 0;

  // Throws naming the field and its flag; see ModelConfig::validate.
  virtual void validate(const ModelConfig& cfg) const = 0;
  // Parameter counts with padded vocabulary rows (as trained) and as Hugging Face counts them.
  virtual std::size_t num_parameters(const ModelConfig& cfg) const = 0;
  virtual std::size_t num_parameters_unpadded(const ModelConfig& cfg) const = 0;
  // ModelConfig::describe's text for this family.
  virtual std::string describe(const ModelConfig& cfg) const = 0;

  // The flat groups and their tensors: names, shapes, offsets, which tensors AdamW decays, the names
  // Hugging Face gives them.
  virtual ParamLayout layout(const ModelConfig& cfg) const = 0;
  // The groups in the order backward reports their gradients ready.
  virtual std::vector<int> gradient_order(const ParamLayout& layout) const = 0;
  // Every buffer the model allocates (activations, checkpoints, scratch), for the memory plan; see
  // Model. pr: the working dtype of parameters and matmul inputs, and the activations' (Precision);
  // checkpoint_kind: where the per-block activation checkpoints live; `device` sizes the attention's and
  // the products' scratch.
  virtual std::vector<BufferSpec> buffers(const ModelConfig& cfg, ModelShape shape, Precision pr,
                                          ActivationCheckpointing ckpt, MemoryKind checkpoint_kind,
                                          DeviceKind device) const = 0;
  // Every matrix product forward and backward run, named ("qkv.fwd", "lmhead.wgrad"), activations'
  // outputs in `act`: what sizes the matmul workspace and what a per-op profile calls each product.
  virtual std::vector<GemmShape> gemm_shapes(const ModelConfig& cfg, ModelShape shape, DType act) const = 0;
  // An upper bound, in floating point, of the bytes of buffers() with every block's set kept, computed
  // before anything is sized: the planner refuses shapes beyond any machine before its 64-bit sums could
  // wrap.
  virtual double activation_bytes_bound(const ModelConfig& cfg, ModelShape shape) const = 0;
  // Forward and backward FLOPs per token of a sequence of T tokens (the matrix products: 6 per parameter
  // they read, and attention's), for the step-time model and MFU.
  virtual double flops_per_token(const ModelConfig& cfg, int T) const = 0;
  // The formula flops_per_token computes, for reports.
  virtual std::string flops_formula() const = 0;

  // Group g's initial values (values resized to the group's count), independently of the other groups
  // and the same bits with any compiler and standard library.
  virtual void init_group(const ModelConfig& cfg, const ParamLayout& layout, std::uint64_t seed, int g,
                          std::vector<float>& values) const = 0;

  // The model, taking every buffer buffers() lists from `planned`.
  virtual std::unique_ptr<Model> make(Device& dev, const ModelConfig& cfg, ModelShape shape, Precision pr,
                                      ActivationCheckpointing ckpt, PlannedBuffers& planned,
                                      MemoryKind checkpoint_kind) const = 0;

  // Hugging Face model folders: the architectures (config.json's "architectures") this family reads, and
  // the shape a config.json gives, refusing fields that change the math and are not built (naming them
  // and `source`). By default a family reads none.
  virtual std::vector<std::string> hf_architectures() const { return {}; }
  virtual ModelConfig config_from_hf(const nlohmann::json& config, const std::string& source) const;
  // The config.json transformers would write for cfg (without torch_dtype), such that config_from_hf reads
  // cfg back; refuses a shape no architecture of hf_architectures() holds. By default a family writes none.
  virtual nlohmann::json hf_config(const ModelConfig& cfg) const;

  // Hugging Face safetensors files or folders. The shape a file implies, given what it does not store (n_head: 0
  // takes a preset's whose other sizes match, else refuses naming the flag to give).
  virtual ModelConfig config_from_safetensors(const std::string& path, int n_head) const = 0;
  // Fills groups[g] (resized to the layout's counts, padding zero) with the file's values as fp32;
  // `seen`, if given, gets every byte read, in the order read. Refuses missing, extra or misshapen tensors
  // and non-finite values, naming the file and the tensor.
  virtual void load_safetensors(const std::string& path, const ParamLayout& layout,
                                std::vector<std::vector<float>>& groups, const SeenBytes& seen) const = 0;
  // The same values handed out a group at a time (the engine's initialisation reads group 0, 1, ...):
  // the file's structure (every tensor present, shapes, dtypes) is checked here, the values as each group
  // is read. `seen` gets every byte read, headers first. By default load_safetensors reads everything
  // first; families reading Hugging Face folders stream.
  virtual std::unique_ptr<WeightSource> open_weights(const std::string& path, const ParamLayout& layout,
                                                     const SeenBytes& seen) const;
  // Writes what transformers' from_pretrained loads (f32, bf16 or f16); groups[g] points at the group's
  // fp32 values.
  virtual void save_safetensors(const std::string& path, const ParamLayout& layout,
                                const std::vector<const float*>& groups, DType dtype) const = 0;
};

// Registers a family; refuses one whose name, or one of whose preset names, is taken. Register at
// start-up, before any thread asks.
void register_model_family(std::unique_ptr<ModelFamily> family);
// The family of that name (GPT-2's is built in); throws naming the registered ones.
const ModelFamily& model_family(const std::string& name);
inline const ModelFamily& model_family(const ModelConfig& cfg) { return model_family(cfg.family); }
std::vector<std::string> model_family_names();

}  // namespace tz
