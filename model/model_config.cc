// ModelConfig's questions, each answered by the config's family; presets looked up across families.
#include "model/model_config.h"

#include "core/error.h"
#include "model/model.h"
#include "model/model_family.h"

namespace tz {

int ModelConfig::pad_vocab(int vocab) { return (vocab + 127) / 128 * 128; }

void ModelConfig::validate() const { model_family(*this).validate(*this); }

std::size_t ModelConfig::num_parameters() const { return model_family(*this).num_parameters(*this); }

std::size_t ModelConfig::num_parameters_unpadded() const {
  return model_family(*this).num_parameters_unpadded(*this);
}

std::string ModelConfig::describe() const { return model_family(*this).describe(*this); }

ModelConfig model_preset(const std::string& name) {
  for (const std::string& f : model_family_names()) {
    const ModelFamily& fam = model_family(f);
    for (const std::string& p : fam.preset_names())
      if (p == name) return fam.preset(name);
  }
  std::string known;
  for (const std::string& p : model_preset_names()) known += (known.empty() ? "" : ", ") + p;
  TZ_FAIL("unknown model preset '", name, "': use one of ", known,
          ", or give --n-layer --n-head --n-embd --vocab --seq-len");
}

std::vector<std::string> model_preset_names() {
  std::vector<std::string> v;
  for (const std::string& f : model_family_names())
    for (const std::string& p : model_family(f).preset_names()) v.push_back(p);
  return v;
}

void check_precision(const Precision& p) {
  TZ_CHECK(p.param == DType::f32 || p.param == DType::bf16 || p.param == DType::f16, "unsupported compute dtype ",
           dtype_name(p.param), ": use fp32, bf16 or fp16");
  TZ_CHECK(p.act == p.param || p.act == DType::f32, "activations in ", dtype_name(p.act), " with ",
           dtype_name(p.param), " parameters are not built: activations are stored in the parameters' dtype or "
           "in fp32");
}

}  // namespace tz
