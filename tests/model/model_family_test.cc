// The registry of model families and GPT-2's answers through it: presets by name across families,
// Hugging Face's parameter counts, FLOPs per token as PaLM's appendix counts them, the Hugging Face names
// every tensor exports under, and the registrations and names refused.
#include "model/model_family.h"

#include <gtest/gtest.h>

#include "tests/common/error_message.h"
#include "tests/common/test_model_family.h"

namespace tz {
namespace {

using testing::error_message;

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(ModelFamily, Gpt2IsBuiltInWithItsPresetsAndHuggingFacesParameterCounts) {
  const ModelFamily& gpt = model_family("gpt2");
  EXPECT_EQ(gpt.name(), "gpt2");
  for (const std::string& p : gpt.preset_names()) EXPECT_EQ(model_preset(p).family, "gpt2") << p;
  // transformers' GPT2LMHeadModel.num_parameters() (the head is tied): 124439808, 354823168, 774030080,
  // 1557611200.
  EXPECT_EQ(model_preset("gpt2").num_parameters_unpadded(), 124439808u);
  EXPECT_EQ(model_preset("gpt2-medium").num_parameters_unpadded(), 354823168u);
  EXPECT_EQ(model_preset("gpt2-large").num_parameters_unpadded(), 774030080u);
  EXPECT_EQ(model_preset("gpt2-xl").num_parameters_unpadded(), 1557611200u);
  // Padded: 47 more rows of 768.
  EXPECT_EQ(model_preset("gpt2").num_parameters(), 124439808u + 47u * 768u);
  EXPECT_EQ(model_preset("tiny").describe(), "2 layers, 4 heads, 64 wide, vocab 256 (padded 256), 64 positions");
}

TEST(ModelFamily, Gpt2sFlopsPerTokenAreSixPerParameterButThePositionTableAndAttentions) {
  const ModelConfig c = model_preset("gpt2");
  const double N = double(c.num_parameters()) - 1024.0 * 768.0;
  EXPECT_EQ(model_family(c).flops_per_token(c, 1024), 6 * N + 12.0 * 12 * 768 * 1024);
  EXPECT_EQ(model_family(c).flops_per_token(c, 64), 6 * N + 12.0 * 12 * 768 * 64);
}

TEST(ModelFamily, TheLayoutIsTheFamilysAndEveryTensorHasItsHuggingFaceName) {
  const ModelConfig c = model_preset("tiny");
  const ParamLayout l = ParamLayout::build(c);
  ASSERT_EQ(l.groups.size(), std::size_t(c.n_layer) + 2);
  std::size_t total = 0;
  for (const GroupSpec& g : l.groups) {
    total += g.count;
    for (const TensorSpec& t : g.tensors) EXPECT_EQ(t.hf_name, "transformer." + t.name);
  }
  EXPECT_EQ(l.total, total);
  EXPECT_EQ(l.find("h.1.mlp.c_fc.weight")->shape, (std::vector<std::int64_t>{64, 256}));
  EXPECT_EQ(l.find("transformer.h.1.mlp.c_fc.weight"), nullptr);  // the family's own names only
  // A second family's layout: its names, the same groups.
  testing::register_test_family();
  ModelConfig t = model_preset("test-tiny");
  const ParamLayout lt = ParamLayout::build(t);
  ASSERT_EQ(lt.groups.size(), l.groups.size());
  EXPECT_EQ(lt.groups[1].tensors[0].hf_name, "test.transformer.h.0.ln_1.weight");
}

TEST(ModelFamily, UnknownFamiliesAndPresetsAreRefusedNamingTheKnownOnes) {
  testing::register_test_family();
  ModelConfig c = model_preset("tiny");
  c.family = "llama-from-the-future";
  const std::string e = error_message([&] { c.validate(); });
  EXPECT_TRUE(has(e, "unknown model family 'llama-from-the-future'")) << e;
  EXPECT_TRUE(has(e, "gpt2, llama, test-gpt")) << e;
  const std::string p = error_message([] { model_preset("gpt5"); });
  EXPECT_TRUE(has(p, "unknown model preset 'gpt5'")) << p;
  EXPECT_TRUE(has(p, "tiny, gpt2, gpt2-medium, gpt2-large, gpt2-xl, llama-tiny, llama3.2-1b")) << p;
  EXPECT_TRUE(has(p, "mistral-7b, test-tiny")) << p;
}

// A family whose name is new but whose preset is GPT-2's "tiny".
class TakesTiny : public testing::TestGptFamily {
 public:
  std::string name() const override { return "takes-tiny"; }
  std::vector<std::string> preset_names() const override { return {"tiny"}; }
};

TEST(ModelFamily, ARegistrationWhoseNameOrPresetIsTakenIsRefused) {
  testing::register_test_family();
  const std::string twice =
      error_message([] { register_model_family(std::make_unique<testing::TestGptFamily>()); });
  EXPECT_TRUE(has(twice, "model family 'test-gpt' is registered already")) << twice;
  const std::string taken = error_message([] { register_model_family(std::make_unique<TakesTiny>()); });
  EXPECT_TRUE(has(taken, "model preset 'tiny' of family 'takes-tiny' is taken by family 'gpt2'")) << taken;
  // Neither was registered.
  EXPECT_EQ(model_family_names(), (std::vector<std::string>{"gpt2", "llama", "test-gpt"}));
}

}  // namespace
}  // namespace tz
