// The layout says which tensors AdamW decays (the model's rule, so the optimizer asks the model
// nothing): GPT-2's matrices and embeddings, not its biases or LayerNorm parameters.
#include "model/param_layout.h"

#include <gtest/gtest.h>

#include "model/model_config.h"

namespace tz {
namespace {

TEST(ParamLayout, MatricesAndEmbeddingsAreDecayedAndBiasesAndNormsAreNot) {
  const ParamLayout layout = ParamLayout::build(model_preset("tiny"));
  int decayed = 0, kept = 0;
  for (const GroupSpec& g : layout.groups)
    for (const TensorSpec& t : g.tensors) {
      const bool bias_or_norm = t.name.ends_with(".bias") || t.name.find("ln_") != std::string::npos;
      EXPECT_EQ(t.decay, !bias_or_norm) << t.name;
      EXPECT_EQ(t.decay, t.shape.size() == 2) << t.name;
      (t.decay ? decayed : kept) += 1;
    }
  const int L = model_preset("tiny").n_layer;
  EXPECT_EQ(decayed, 2 + 4 * L);  // wte, wpe; per block c_attn, attn c_proj, c_fc, mlp c_proj
  EXPECT_EQ(kept, 2 + 8 * L);     // ln_f weight and bias; per block 2 LayerNorms x 2 and 4 biases
}

}  // namespace
}  // namespace tz
