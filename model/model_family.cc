// The registry of model families, GPT-2's built in.
#include "model/model_family.h"

#include <mutex>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/gpt_family.h"
#include "model/llama_family.h"

namespace tz {
namespace {

struct Registry {
  std::mutex mu;
  std::vector<std::unique_ptr<ModelFamily>> families;  // in registration order
};

void add(Registry& r, std::unique_ptr<ModelFamily> f) {
  TZ_CHECK(f && !f->name().empty(), "a model family needs a name");
  for (const auto& other : r.families) {
    TZ_CHECK(other->name() != f->name(), "model family '", f->name(), "' is registered already");
    for (const std::string& p : f->preset_names())
      for (const std::string& q : other->preset_names())
        TZ_CHECK(p != q, "model preset '", p, "' of family '", f->name(), "' is taken by family '", other->name(),
                 "'");
  }
  r.families.push_back(std::move(f));
}

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;  // never destroyed: models may outlive static destruction order
    add(*reg, make_gpt2_family());
    add(*reg, make_llama_family());
    return reg;
  }();
  return *r;
}

}  // namespace

void register_model_family(std::unique_ptr<ModelFamily> family) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  add(r, std::move(family));
}

const ModelFamily& model_family(const std::string& name) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::string known;
  for (const auto& f : r.families) {
    if (f->name() == name) return *f;
    known += (known.empty() ? "" : ", ") + f->name();
  }
  TZ_FAIL("unknown model family '", name.substr(0, 64), "': this tierzero knows ", known);
}

ModelConfig ModelFamily::config_from_hf(const nlohmann::json&, const std::string& source) const {
  TZ_FAIL(source, ": the ", name(), " family reads no Hugging Face config.json");
}

std::unique_ptr<WeightSource> ModelFamily::open_weights(const std::string& path, const ParamLayout& layout,
                                                       const SeenBytes& seen) const {
  std::vector<std::vector<float>> groups;
  load_safetensors(path, layout, groups, seen);
  return std::make_unique<LoadedWeights>(std::move(groups));
}

nlohmann::json ModelFamily::hf_config(const ModelConfig&) const {
  TZ_FAIL("the ", name(), " family writes no Hugging Face config.json: its models cannot be saved as a folder");
}

std::vector<std::string> model_family_names() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> v;
  for (const auto& f : r.families) v.push_back(f->name());
  return v;
}

}  // namespace tz
