// The Llama family (Llama 3.x, Qwen2.5, Mistral) as a model family record: presets with their published
// shapes, shape rules, Hugging Face's parameter counts, the layout, the buffers its model will take, FLOPs
// per token and seeded initialisation, so `tierzero plan` plans and `train` trains these models (the
// forward and backward are model/llama.h).
#pragma once

#include <memory>

#include "model/model_family.h"

namespace tz {

std::unique_ptr<ModelFamily> make_llama_family();

}  // namespace tz
