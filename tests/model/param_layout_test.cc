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

// Every preset's tensors of kBlockAlignElements or more start on a multiple of kBlockAlign (the int8
// moments' blocks: shards on multiples of it never cut one), and only their padding lies between tensors:
// a short tensor before one adds at most kBlockAlign - 1 elements, under 0.01% of a real model's.
TEST(ParamLayout, EveryPresetStartsItsLargeTensorsOnABlock) {
  for (const std::string& name : model_preset_names()) {
    SCOPED_TRACE(name);
    const ParamLayout layout = ParamLayout::build(model_preset(name));
    std::size_t padding = 0, total = 0;
    for (const GroupSpec& g : layout.groups) {
      std::size_t end = 0;
      for (const TensorSpec& t : g.tensors) {
        if (t.count >= kBlockAlignElements)
          EXPECT_EQ(t.offset % kBlockAlign, 0u) << t.name << " at " << t.offset;
        EXPECT_GE(t.offset, end) << t.name;
        EXPECT_LT(t.offset - end, kBlockAlign) << t.name;
        padding += t.offset - end, total += t.count;
        end = t.offset + t.count;
      }
      EXPECT_LE(end, g.count);
    }
    if (total >= 100'000'000) EXPECT_LT(double(padding), 1e-4 * double(total)) << padding << " of " << total;
  }
}

// After a packed tensor the next follows it directly (a product reads them as one matrix), whatever its size.
TEST(ParamLayout, ATensorAfterAPackedOneFollowsItDirectly) {
  GroupSpec g;
  add_tensor(g, "norm", "norm", {48}, {}, false);
  add_tensor(g, "q", "q", {64, 64}, {}, true, /*packed=*/true);
  add_tensor(g, "k", "k", {40, 64}, {}, true, /*packed=*/true);
  add_tensor(g, "v", "v", {40, 64}, {}, true);
  EXPECT_EQ(g.tensors[1].offset, 256u);
  EXPECT_EQ(g.tensors[2].offset, 256u + 4096u);
  EXPECT_EQ(g.tensors[3].offset, 256u + 4096u + 2560u);
}

}  // namespace
}  // namespace tz
