// GPT-2 as a model family (model/model_family.h): presets, shape rules, layout, buffers, FLOPs,
// initialisation, the model itself and Hugging Face's GPT-2 files. The registry builds it in.
#pragma once

#include <memory>

#include "model/model_family.h"

namespace tz {

std::unique_ptr<ModelFamily> make_gpt2_family();

}  // namespace tz
