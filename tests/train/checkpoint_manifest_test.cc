// The checkpoint manifest is validated as a whole before anything in it is trusted: each hostile variant
// (overlapping sections, a section past its file, a gap or a double cover in a group, counts that cannot
// fit or overflow, negative and fractional numbers, file names outside the folder or given twice) is
// refused naming the manifest, the field and what is wrong, and saying to resume from another checkpoint.
#include "train/checkpoint_manifest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>

#include "core/error.h"
#include "model/param_layout.h"
#include "tests/common/test_dir.h"
#include "train/checkpoint_validate.h"

namespace tz {
namespace {

using json = nlohmann::json;
const std::string kSrc = "ckpt/step-00000007/manifest.json";

// A manifest as two ranks write it for the tiny model: rank r's file holds half of every group (the
// first half in rank-00000.bin, the second in rank-00001.bin), sections one after another.
CheckpointManifest two_rank_manifest() {
  CheckpointManifest m;
  m.step = 7;
  m.engine.optimizer_steps = 7;
  m.global_batch_tokens = 1024;
  m.data_batch = 7;
  m.data_identity = "default corpus";
  m.model = model_preset("tiny");
  m.dtype = "fp32";
  m.world = 2;
  m.offload_optimizer = m.offload_param = "device";
  m.schedule = json::object();
  const ParamLayout layout = ParamLayout::build(m.model);
  m.files = {{"rank-00000.bin", 0, 0x0123456789abcdefull, {}}, {"rank-00001.bin", 0, 42, {}}};
  for (std::size_t g = 0; g < layout.groups.size(); ++g) {
    const std::uint64_t n = layout.groups[g].count, half = n / 2;
    m.groups.push_back({layout.groups[g].name, n, json::array()});
    for (int r = 0; r < 2; ++r) {
      CheckpointFile& f = m.files[r];
      const std::uint64_t begin = r == 0 ? 0 : half, count = r == 0 ? half : n - half;
      f.sections.push_back({int(g), begin, count, f.bytes});
      f.bytes += 12 * count;
    }
  }
  return m;
}

json good() { return manifest_to_json(two_rank_manifest()); }

std::string refusal(const json& j) {
  try {
    manifest_from_json(j, kSrc);
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

// Every refusal names the manifest and says what to do; `parts` are the field and what is wrong.
void expect_refused(const json& j, std::initializer_list<std::string> parts) {
  const std::string e = refusal(j);
  EXPECT_NE(e.find(kSrc + ": "), std::string::npos) << e;
  EXPECT_NE(e.find("resume from another checkpoint"), std::string::npos) << e;
  for (const auto& p : parts) EXPECT_NE(e.find(p), std::string::npos) << "missing '" << p << "' in: " << e;
}

json& section(json& j, int file, int k) { return j["files"][file]["sections"][k]; }

TEST(CheckpointManifest, AManifestAsTheWriterMakesItIsAcceptedUnchanged) {
  const CheckpointManifest m = manifest_from_json(good(), kSrc);
  EXPECT_EQ(manifest_to_json(m), good());
  ASSERT_EQ(m.files.size(), 2u);
  EXPECT_EQ(m.files[0].xxh3, 0x0123456789abcdefull);
  EXPECT_EQ(m.files[1].sections[2].begin, m.groups[2].count / 2);
}

TEST(CheckpointManifest, OverlappingSectionsOfAFileAreRefused) {
  json j = good();  // section 1 starts inside section 0 (the reported hole: both read the same bytes)
  section(j, 0, 1)["offset"] = section(j, 0, 0)["offset"].get<std::uint64_t>() + 12;
  expect_refused(j, {"files[0] (rank-00000.bin).sections[1] bytes [12, ",
                     ") overlap those of files[0] (rank-00000.bin).sections[0]"});
  json same = good();  // two groups' sections at the same offset
  section(same, 1, 2)["offset"] = 0;
  expect_refused(same, {"files[1] (rank-00001.bin).sections[", "overlap those of"});
}

TEST(CheckpointManifest, ASectionPastTheEndOfItsFileIsRefused) {
  json j = good();
  const std::uint64_t bytes = j["files"][1]["bytes"];
  section(j, 1, 3)["offset"] = bytes - 12;
  expect_refused(j, {"files[1] (rank-00001.bin).sections[3] bytes [" + std::to_string(bytes - 12),
                     "run past the end of the file's " + std::to_string(bytes) + " bytes"});
  json far = good();  // an offset whose end would wrap around 2^64
  section(far, 0, 0)["offset"] = std::uint64_t(-8);
  expect_refused(far,
                 {"files[0] (rank-00000.bin).sections[0] bytes [18446744073709551608", "run past the end"});
}

TEST(CheckpointManifest, BytesOfAFileThatNoSectionHoldsAreRefused) {
  json j = good();
  j["files"][0]["bytes"] = j["files"][0]["bytes"].get<std::uint64_t>() + 4;
  expect_refused(j, {"files[0] (rank-00000.bin) bytes [", ") belong to no section"});
}

// Lays file i's sections out one after another from byte 0, as the writer does, and sets its bytes.
void relayout(json& j, int i) {
  std::uint64_t at = 0;
  for (json& s : j["files"][i]["sections"]) s["offset"] = at, at += 12 * s["count"].get<std::uint64_t>();
  j["files"][i]["bytes"] = at;
}

TEST(CheckpointManifest, AGapInAGroupIsRefused) {
  json j = good();  // rank 1 skips 4 elements of the embedding and holds 4 of final_norm twice instead,
  json& secs = j["files"][1]["sections"];  // so that the sizes still add up
  const std::uint64_t half = secs[0]["begin"];
  secs[0]["begin"] = half + 4;
  secs[0]["count"] = secs[0]["count"].get<std::uint64_t>() - 4;
  secs.push_back({{"group", 3}, {"begin", 0}, {"count", 4}, {"offset", 0}});
  relayout(j, 1);
  expect_refused(j, {"group embedding elements [" + std::to_string(half) + ", " + std::to_string(half + 4) +
                     ") are in no file"});
  json fewer = good();  // a section dropped with its bytes: the files are too small for the groups
  fewer["files"][1]["sections"].erase(3);
  relayout(fewer, 1);
  expect_refused(fewer, {"groups[3] (final_norm).count 128: the groups up to it need more than the"});
}

TEST(CheckpointManifest, AGroupCoveredTwiceByTwoFilesIsRefused) {
  json j = good();  // a third file repeating rank 1's sections (three ranks wrote it, as far as it says)
  json third = j["files"][1];
  third["name"] = "rank-00002.bin";
  j["files"].push_back(third);
  j["writer"]["world"] = 3;
  const std::uint64_t n = j["groups"][0]["count"];
  expect_refused(j, {"group embedding elements [" + std::to_string(n / 2) + ", " + std::to_string(n) +
                     ") are in two sections, files[1] (rank-00001.bin).sections[0] and files[2] "
                     "(rank-00002.bin).sections[0]"});
}

TEST(CheckpointManifest, CountsThatCannotFitTheFilesOrOverflowAreRefusedBeforeTheSections) {
  json j = good();
  j["groups"][0]["count"] = std::uint64_t(1) << 62;  // 12 x 2^62 does not fit 64 bits
  expect_refused(j,
                 {"groups[0] (embedding).count 4611686018427387904 is more elements than 2^64 bytes hold"});
  json big = good();
  big["groups"][1]["count"] = std::uint64_t(1) << 60;  // fits 64 bits, not the files
  expect_refused(big,
                 {"groups[1] (block.0).count 1152921504606846976: the groups up to it need more than the",
                  "bytes all the data files hold"});
  json sec = good();
  section(sec, 0, 0)["count"] = std::uint64_t(1) << 62;
  expect_refused(
      sec,
      {"files[0] (rank-00000.bin).sections[0] elements [0, +4611686018427387904) run past group embedding"});
  json sum = good();  // two files whose sizes add up past 2^64
  sum["files"][0]["bytes"] = std::uint64_t(-1);
  expect_refused(sum, {"files[1] (rank-00001.bin).bytes", "add up to more than 2^64 bytes"});
  json tokens = good();  // the data position in tokens would overflow
  tokens["data"]["batch"] = std::uint64_t(1) << 60;
  expect_refused(tokens, {"'data.batch' 1152921504606846976 x 'data.global_batch_tokens' 1024"});
}

TEST(CheckpointManifest, NegativeFractionalAndHugeNumbersAreRefusedNeverRounded) {
  json neg = good();
  section(neg, 1, 0)["offset"] = -1;
  expect_refused(neg, {"'files[1].sections[0].offset' must be a whole number from 0 to 2^64 - 1, got -1"});
  json frac = good();
  section(frac, 0, 2)["count"] = 6.5;
  expect_refused(frac, {"'files[0].sections[2].count' must be a whole number", "got 6.5"});
  json whole_float = good();
  whole_float["step"] = 7.0;
  expect_refused(whole_float, {"'step' must be a whole number", "got 7.0"});
  json huge = json::parse(good().dump());
  huge["groups"][0]["count"] = 1e300;
  expect_refused(huge, {"'groups[0].count' must be a whole number", "got 1e+300"});
  json step = good();
  step["step"] = std::uint64_t(1) << 40;
  expect_refused(step, {"'step' is 1099511627776, outside [0, 2147483647]"});
  json stage = good();
  stage["writer"]["stage"] = 4;
  expect_refused(stage, {"'writer.stage' is 4, outside [0, 3]"});
  json wide = good();
  wide["model"]["n_embd"] = 1 << 30;
  expect_refused(wide, {"'model.n_embd' is 1073741824, outside [1, 1048576]"});
  for (double scale : {0.0, -1.0, 1e39}) {
    json j = good();
    j["loss_scaler"]["scale"] = scale;
    expect_refused(j, {"'loss_scaler.scale' must be a number in ["});
  }
}

TEST(CheckpointManifest, FileNamesOutsideTheFolderOrGivenTwiceAreRefused) {
  for (const std::string name : {"../rank-00000.bin", "..", ".", "sub/rank-00000.bin", "/etc/passwd",
                                 ".hidden", "manifest.json", "", "rank\\00000.bin", "rank 0.bin"}) {
    json j = good();
    j["files"][0]["name"] = name;
    expect_refused(j, {"files[0].name '" + name + "' is not a plain file name inside the checkpoint folder"});
  }
  json twice = good();
  twice["files"][1]["name"] = "rank-00000.bin";
  expect_refused(twice, {"files[0] and files[1] both name 'rank-00000.bin'"});
}

TEST(CheckpointManifest, CountsThatDisagreeWithTheWriterOrTheModelAreRefused) {
  json files = good();
  files["writer"]["world"] = 4;
  expect_refused(files, {"'files' lists 2 data files, but 'writer.world' 4 ranks each wrote one"});
  json layers = good();
  layers["model"]["n_layer"] = 3;
  expect_refused(layers, {"'groups' lists 4 groups, but a model of 'model.n_layer' 3 has 5"});
  json wider = good();  // the same number of groups, but each section sized for another model
  wider["model"]["n_embd"] = 128;
  expect_refused(wider, {"groups[0] is embedding of ", "elements, but the model's is embedding of "});
}

// The model's family: written by name; a manifest from before families (no key) is GPT-2's; an unknown
// family, or one that is not a string, is refused naming the field.
TEST(CheckpointManifest, TheModelsFamilyIsWrittenAndAnOldManifestWithoutItIsGpt2s) {
  const json j = good();
  EXPECT_EQ(j.at("model").at("family"), "gpt2");
  json old = good();
  old["model"].erase("family");
  EXPECT_EQ(manifest_from_json(old, "old.json").model.family, "gpt2");
  json unknown = good();
  unknown["model"]["family"] = "llama-from-the-future";
  expect_refused(unknown, {"'model' is not a valid model shape", "unknown model family 'llama-from-the-future'"});
  json number = good();
  number["model"]["family"] = 7;
  expect_refused(number, {"model.family"});
}

// The sections are checked sorted, so 400k of them (a quadratic check would take minutes) take well
// under a second; the bound leaves room for a loaded machine and sanitizer builds.
TEST(CheckpointManifest, ValidationIsNLogNInTheSections) {
  CheckpointManifest m;
  m.groups = {{"embedding", 400000, json::array()}};
  m.files = {{"rank-00000.bin", 0, 0, {}}, {"rank-00001.bin", 0, 0, {}}};
  std::vector<std::uint64_t> order(400000);
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  for (std::uint64_t e : order) {
    CheckpointFile& f = m.files[e % 2];
    f.sections.push_back({0, e, 1, f.bytes});
    f.bytes += 12;
  }
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_NO_THROW(validate_manifest_layout(m, kSrc));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 5.0) << "validating 400000 sections took " << s << " s";
  std::swap(m.files[1].sections[10].begin, m.files[1].sections[11].begin);  // still every element once
  EXPECT_NO_THROW(validate_manifest_layout(m, kSrc));
  m.files[1].sections[10].begin = m.files[0].sections[0].begin;  // now one twice, one nowhere
  EXPECT_THROW(validate_manifest_layout(m, kSrc), Error);
}

TEST(CheckpointManifest, AManifestOverItsSizeLimitIsRefusedBeforeParsing) {
  testing::TestDir d;
  std::string text = good().dump();
  text.append(kMaxManifestBytes + 1 - text.size(), ' ');  // valid JSON, one byte too long
  std::ofstream(d.file("manifest.json"), std::ios::binary) << text;
  try {
    read_manifest(d.path());
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is 67108865 bytes, more than the 67108864 it may have"),
              std::string::npos)
        << e.what();
  }
  text.resize(kMaxManifestBytes);
  std::ofstream(d.file("manifest.json"), std::ios::binary | std::ios::trunc) << text;
  EXPECT_EQ(read_manifest(d.path()).step, 7);
}

}  // namespace
}  // namespace tz
