// Tests model/safetensors_{format,reader,writer}.h and model/gpt_safetensors.h: the generic reader's validation, the writer's format, and GPT-2
// import/export as Hugging Face lays it out.
#include "model/gpt_safetensors.h"
#include "model/safetensors_reader.h"
#include "model/safetensors_writer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "tests/common/test_dir.h"

namespace tz {
namespace {

using tz::testing::TestDir;

ModelConfig small_config() {
  ModelConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 8;
  c.vocab_size = 50;
  c.padded_vocab_size = ModelConfig::pad_vocab(50);  // 128
  c.max_seq_len = 16;
  return c;
}

// Random weights in every tensor, including wte's padded rows (export must drop them); alignment
// padding between tensors stays zero.
std::vector<std::vector<float>> random_groups(const ParamLayout& layout, std::uint64_t seed = 1) {
  std::mt19937_64 gen(seed);
  std::vector<std::vector<float>> groups(layout.groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    groups[g].assign(layout.groups[g].count, 0.0f);
    for (const auto& t : layout.groups[g].tensors)
      for (std::size_t i = 0; i < t.count; ++i)
        groups[g][t.offset + i] = float(std::int64_t(gen() >> 40) - (1 << 23)) / float(1 << 22);
  }
  return groups;
}

std::vector<const float*> pointers(const std::vector<std::vector<float>>& groups) {
  std::vector<const float*> p;
  for (const auto& g : groups) p.push_back(g.data());
  return p;
}

// What loading should give: the saved values (rounded through dtype), wte's padded rows zero.
std::vector<std::vector<float>> expected_after_load(const ParamLayout& layout,
                                                    const std::vector<std::vector<float>>& groups,
                                                    DType dtype) {
  auto out = groups;
  for (std::size_t g = 0; g < out.size(); ++g)
    for (const auto& t : layout.groups[g].tensors) {
      std::size_t hf_count = 1;
      for (auto d : t.hf_shape) hf_count *= std::size_t(d);
      for (std::size_t i = 0; i < t.count; ++i) {
        float& v = out[g][t.offset + i];
        if (i >= hf_count)
          v = 0.0f;
        else if (dtype == DType::bf16)
          v = bf16_to_float(float_to_bf16(v));
        else if (dtype == DType::f16)
          v = fp16_to_float(float_to_fp16(v));
      }
    }
  return out;
}

void expect_bitwise_equal(const std::vector<std::vector<float>>& a,
                          const std::vector<std::vector<float>>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t g = 0; g < a.size(); ++g) {
    ASSERT_EQ(a[g].size(), b[g].size()) << "group " << g;
    for (std::size_t i = 0; i < a[g].size(); ++i)
      ASSERT_EQ(std::memcmp(&a[g][i], &b[g][i], sizeof(float)), 0)
          << "group " << g << " element " << i << ": " << a[g][i] << " vs " << b[g][i];
  }
}

// Runs fn, expecting a tz::Error whose message contains every one of `parts`.
template <typename Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& parts) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
    return;
  }
  ADD_FAILURE() << "expected a tz::Error";
}

// Writes a file byte for byte: an 8-byte little-endian length (header.size() unless given), the header, data.
void write_raw(const std::string& path, const std::string& header, const std::string& data,
               std::optional<std::uint64_t> declared_len = std::nullopt) {
  std::ofstream f(path, std::ios::binary);
  std::uint64_t n = declared_len.value_or(header.size());
  for (int i = 0; i < 8; ++i) f.put(char((n >> (8 * i)) & 0xff));
  f << header << data;
}

// The GPT-2 tensors of `groups` as generic write entries, with a name prefix and a dtype.
std::vector<SafetensorsWriteTensor> gpt_entries(const ParamLayout& layout,
                                                const std::vector<std::vector<float>>& groups,
                                                const std::string& prefix,
                                                SafetensorsDType dtype = SafetensorsDType::F32) {
  std::vector<SafetensorsWriteTensor> out;
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (const auto& t : layout.groups[g].tensors)
      out.push_back({prefix + t.name, dtype, t.hf_shape, nullptr, groups[g].data() + t.offset});
  return out;
}

// Drops the entry called `name` from entries.
void drop(std::vector<SafetensorsWriteTensor>& entries, const std::string& name) {
  std::erase_if(entries, [&](const auto& e) { return e.name == name; });
}

class Safetensors : public ::testing::Test {
 protected:
  TestDir dir;
  ModelConfig cfg = small_config();
  ParamLayout layout = ParamLayout::build(cfg);
  std::vector<std::vector<float>> groups = random_groups(layout);
};

TEST_F(Safetensors, F32RoundTripIsBitwise) {
  const auto path = dir.file("m.safetensors");
  save_gpt_safetensors(path, layout, pointers(groups), DType::f32);
  std::vector<std::vector<float>> loaded;
  load_gpt_safetensors(path, layout, loaded);
  expect_bitwise_equal(loaded, expected_after_load(layout, groups, DType::f32));
}

TEST_F(Safetensors, Bf16AndF16RoundTripsGiveTheRoundedValues) {
  for (DType dt : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    const auto path = dir.file("m.safetensors");
    save_gpt_safetensors(path, layout, pointers(groups), dt);
    SafetensorsReader r(path);
    EXPECT_EQ(r.find("transformer.h.1.mlp.c_fc.weight")->dtype, to_safetensors_dtype(dt));
    std::vector<std::vector<float>> loaded;
    load_gpt_safetensors(path, layout, loaded);
    expect_bitwise_equal(loaded, expected_after_load(layout, groups, dt));
  }
}

TEST_F(Safetensors, LoadsNamesWithAndWithoutTheTransformerPrefix) {
  const auto expected = expected_after_load(layout, groups, DType::f32);
  for (std::string prefix : {"transformer.", ""}) {
    SCOPED_TRACE("prefix '" + prefix + "'");
    const auto path = dir.file("p.safetensors");
    write_safetensors(path, gpt_entries(layout, groups, prefix));
    std::vector<std::vector<float>> loaded;
    load_gpt_safetensors(path, layout, loaded);
    expect_bitwise_equal(loaded, expected);
    ModelConfig inferred = infer_gpt_config_from_safetensors(path, cfg.n_head);
    EXPECT_EQ(inferred.n_layer, cfg.n_layer);
    EXPECT_EQ(inferred.n_embd, cfg.n_embd);
  }
}

TEST_F(Safetensors, IgnoresAttentionBiasBuffersAndAcceptsATiedLmHead) {
  const auto path = dir.file("hf.safetensors");
  auto entries = gpt_entries(layout, groups, "transformer.");
  std::vector<float> mask(16 * 16, 1.0f), masked_bias(1, -1e4f);
  entries.push_back(
      {"transformer.h.0.attn.bias", SafetensorsDType::F32, {1, 1, 16, 16}, nullptr, mask.data()});
  entries.push_back(
      {"transformer.h.1.attn.masked_bias", SafetensorsDType::F32, {}, nullptr, masked_bias.data()});
  const TensorSpec* wte = layout.find("wte.weight");
  entries.push_back(
      {"lm_head.weight", SafetensorsDType::F32, wte->hf_shape, nullptr, groups[0].data() + wte->offset});
  write_safetensors(path, entries);
  std::vector<std::vector<float>> loaded;
  load_gpt_safetensors(path, layout, loaded);
  expect_bitwise_equal(loaded, expected_after_load(layout, groups, DType::f32));
}

TEST_F(Safetensors, RefusesAnLmHeadThatDiffersFromWte) {
  const auto path = dir.file("untied.safetensors");
  auto entries = gpt_entries(layout, groups, "transformer.");
  const TensorSpec* wte = layout.find("wte.weight");
  std::vector<float> head(groups[0].begin() + wte->offset, groups[0].begin() + wte->offset + 50 * 8);
  head[3 * 8 + 5] += 1.0f;
  entries.push_back({"lm_head.weight", SafetensorsDType::F32, wte->hf_shape, nullptr, head.data()});
  write_safetensors(path, entries);
  std::vector<std::vector<float>> loaded;
  expect_error([&] { load_gpt_safetensors(path, layout, loaded); },
               {path, "lm_head.weight differs from wte.weight at row 3, column 5"});
}

TEST_F(Safetensors, WrittenHeaderHasHfNamesShapesDtypesMetadataAndContiguousOffsets) {
  const auto path = dir.file("m.safetensors");
  save_gpt_safetensors(path, layout, pointers(groups), DType::bf16);
  SafetensorsReader r(path);

  EXPECT_EQ(r.header_size() % 8, 0u);
  EXPECT_EQ(r.metadata(), (std::map<std::string, std::string>{{"format", "pt"}}));

  std::map<std::string, std::vector<std::int64_t>> expected;
  for (const auto& g : layout.groups)
    for (const auto& t : g.tensors) expected["transformer." + t.name] = t.hf_shape;
  ASSERT_EQ(r.tensors().size(), expected.size());  // so no lm_head.weight, no attn.bias
  for (const auto& t : r.tensors()) {
    ASSERT_TRUE(expected.count(t.name)) << t.name;
    EXPECT_EQ(t.shape, expected[t.name]) << t.name;
    EXPECT_EQ(t.dtype, SafetensorsDType::BF16) << t.name;
  }
  EXPECT_EQ(r.find("transformer.h.0.attn.c_attn.weight")->shape,
            (std::vector<std::int64_t>{8, 24}));  // Conv1D [in, out]
  EXPECT_EQ(r.find("transformer.h.1.mlp.c_proj.weight")->shape, (std::vector<std::int64_t>{32, 8}));
  EXPECT_EQ(r.find("transformer.wte.weight")->shape,
            (std::vector<std::int64_t>{50, 8}));  // padded rows dropped

  // Tensors (sorted by name, as tensors() returns them) are laid end to end from 0 to the file's end.
  std::uint64_t at = 0;
  for (const auto& t : r.tensors()) {
    EXPECT_EQ(t.begin, at) << t.name;
    at = t.end;
  }
  EXPECT_EQ(r.data_start() + at, std::filesystem::file_size(path));

  // The raw JSON as any other parser sees it.
  std::ifstream f(path, std::ios::binary);
  std::string header(r.header_size(), '\0');
  f.seekg(8);
  f.read(header.data(), std::streamsize(header.size()));
  auto j = nlohmann::json::parse(header);
  EXPECT_EQ(j["__metadata__"]["format"], "pt");
  EXPECT_EQ(j["transformer.ln_f.bias"]["dtype"], "BF16");
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << "left behind: " << e.path();
}

TEST_F(Safetensors, PaddedWteRowsAreDroppedOnExportAndZeroOnImport) {
  const TensorSpec* wte = layout.find("wte.weight");
  for (std::size_t i = 50 * 8; i < 128 * 8; ++i) groups[0][wte->offset + i] = 7.0f;
  const auto path = dir.file("m.safetensors");
  save_gpt_safetensors(path, layout, pointers(groups), DType::f32);
  SafetensorsReader r(path);
  const SafetensorsTensor* t = r.find("transformer.wte.weight");
  EXPECT_EQ(t->nbytes(), 50u * 8u * 4u);
  std::vector<std::vector<float>> loaded;
  load_gpt_safetensors(path, layout, loaded);
  for (std::size_t i = 0; i < 128 * 8; ++i) {
    float want = i < 50 * 8 ? groups[0][wte->offset + i] : 0.0f;
    ASSERT_EQ(loaded[0][wte->offset + i], want) << "wte element " << i;
  }
}

TEST_F(Safetensors, InfersTheConfigFromTheFile) {
  const auto path = dir.file("m.safetensors");
  save_gpt_safetensors(path, layout, pointers(groups), DType::f32);
  ModelConfig c = infer_gpt_config_from_safetensors(path, 2);
  EXPECT_EQ(c.n_layer, 2);
  EXPECT_EQ(c.n_head, 2);
  EXPECT_EQ(c.n_embd, 8);
  EXPECT_EQ(c.vocab_size, 50);
  EXPECT_EQ(c.padded_vocab_size, 128);
  EXPECT_EQ(c.max_seq_len, 16);
  expect_error([&] { infer_gpt_config_from_safetensors(path, 3); }, {path, "n_head 3"});
}

TEST_F(Safetensors, GenericWriterAndReaderKeepAnyDtypeRaw) {
  const auto path = dir.file("raw.safetensors");
  std::vector<std::int64_t> ids{1, -2, 1ll << 40};
  std::vector<std::uint8_t> bytes{1, 2, 3, 4, 5};
  write_safetensors(path,
                    {{"ids", SafetensorsDType::I64, {3}, ids.data(), nullptr},
                     {"b", SafetensorsDType::U8, {5}, bytes.data(), nullptr}},
                    {{"note", "x"}});
  SafetensorsReader r(path);
  ASSERT_NE(r.find("ids"), nullptr);
  std::vector<std::int64_t> got_ids(3);
  r.read_raw(*r.find("ids"), got_ids.data());
  EXPECT_EQ(got_ids, ids);
  std::vector<std::uint8_t> got_bytes(5);
  r.read_raw(*r.find("b"), got_bytes.data());
  EXPECT_EQ(got_bytes, bytes);
  EXPECT_EQ(r.metadata().at("note"), "x");
  expect_error([&] { r.read_f32(*r.find("ids")); }, {path, "'ids'", "I64"});
}

// ---- malformed files: each is refused with a message naming the file and the problem ----

const std::string kOneTensor = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
const std::string kEightBytes(8, '\0');

TEST_F(Safetensors, ValidMinimalFileReads) {
  const auto path = dir.file("ok.safetensors");
  write_raw(path, kOneTensor, kEightBytes);
  SafetensorsReader r(path);
  EXPECT_EQ(r.tensors().size(), 1u);
}

TEST_F(Safetensors, RefusesAFileTooShortForTheHeaderLength) {
  const auto path = dir.file("short.safetensors");
  std::ofstream(path, std::ios::binary) << "abc";
  expect_error([&] { SafetensorsReader r(path); }, {path, "too short (3 bytes)"});
}

TEST_F(Safetensors, RefusesATruncatedFile) {
  const auto path = dir.file("trunc.safetensors");
  write_raw(path, kOneTensor, kEightBytes);
  std::filesystem::resize_file(path, 8 + kOneTensor.size() + 4);  // data cut short
  expect_error([&] { SafetensorsReader r(path); },
               {path, "tensor 'a'", "out of range", "holds only 4 bytes"});
  std::filesystem::resize_file(path, 8 + 10);  // header cut short
  expect_error([&] { SafetensorsReader r(path); }, {path, "declares a JSON header of"});
}

TEST_F(Safetensors, RefusesAHeaderLengthPastTheEnd) {
  const auto path = dir.file("len.safetensors");
  write_raw(path, kOneTensor, kEightBytes, 1000);
  expect_error([&] { SafetensorsReader r(path); }, {path, "declares a JSON header of 1000 bytes but only ",
                                                    std::to_string(kOneTensor.size() + 8)});
}

// The reference implementation refuses headers over 100 MB before reading them; so do we (a corrupt
// length must not make us allocate and read gigabytes).
TEST_F(Safetensors, RefusesAHeaderOverOneHundredMegabytes) {
  const auto path = dir.file("huge.safetensors");
  write_raw(path, kOneTensor, kEightBytes, kMaxSafetensorsHeader + 1);
  std::filesystem::resize_file(path, kMaxSafetensorsHeader + 100);  // sparse: the length fits the file
  expect_error([&] { SafetensorsReader r(path); },
               {path, "declares a JSON header of 100000001 bytes, more than the 100000000"});
}

TEST_F(Safetensors, RefusesBadJson) {
  const auto path = dir.file("json.safetensors");
  write_raw(path, R"({"a":{"dtype":"F32",)", kEightBytes);
  expect_error([&] { SafetensorsReader r(path); }, {path, "not valid JSON"});
  write_raw(path, R"([1, 2])", "");
  expect_error([&] { SafetensorsReader r(path); }, {path, "is a array, not an object"});
  write_raw(path, R"({"a":{"dtype":"F32","shape":[2]}})", kEightBytes);
  expect_error([&] { SafetensorsReader r(path); }, {path, "tensor 'a'", "data_offsets"});
  write_raw(path, R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", kEightBytes);
  expect_error([&] { SafetensorsReader r(path); }, {path, "tensor 'a'", "non-negative"});
  write_raw(path, R"({"__metadata__":{"format":3}})", "");
  expect_error([&] { SafetensorsReader r(path); }, {path, "__metadata__ entry 'format'"});
}

TEST_F(Safetensors, RefusesAnUnknownDtype) {
  const auto path = dir.file("dtype.safetensors");
  write_raw(path, R"({"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", kEightBytes);
  expect_error([&] { SafetensorsReader r(path); }, {path, "tensor 'a'", "unknown dtype 'Q4'"});
}

TEST_F(Safetensors, RefusesOffsetsOutOfBounds) {
  const auto path = dir.file("oob.safetensors");
  write_raw(path, R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", kEightBytes);
  expect_error([&] { SafetensorsReader r(path); }, {path, "tensor 'a'", "[0, 16] out of range"});
  write_raw(path, R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", kEightBytes);
  expect_error([&] { SafetensorsReader r(path); }, {path, "tensor 'a'", "run backwards"});
}

TEST_F(Safetensors, RefusesOffsetsThatDisagreeWithShapeAndDtype) {
  const auto path = dir.file("size.safetensors");
  write_raw(path, R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::string(12, '\0'));
  expect_error([&] { SafetensorsReader r(path); },
               {path, "tensor 'a'", "spanning 8 bytes", "[3] of F32 needs 12 bytes"});
}

TEST_F(Safetensors, RefusesOverlappingTensors) {
  const auto path = dir.file("overlap.safetensors");
  write_raw(path,
            R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
            R"("b":{"dtype":"F16","shape":[2],"data_offsets":[6,10]}})",
            std::string(10, '\0'));
  expect_error([&] { SafetensorsReader r(path); }, {path, "'a' [0, 8)", "'b' [6, 10)", "overlap"});
}

TEST_F(Safetensors, RefusesAMissingTensor) {
  const auto path = dir.file("missing.safetensors");
  auto entries = gpt_entries(layout, groups, "transformer.");
  drop(entries, "transformer.h.1.ln_2.bias");
  write_safetensors(path, entries);
  std::vector<std::vector<float>> loaded;
  expect_error([&] { load_gpt_safetensors(path, layout, loaded); }, {path, "missing tensor 'h.1.ln_2.bias'"});
}

TEST_F(Safetensors, RefusesAWrongShapeGivingBothShapes) {
  const auto path = dir.file("shape.safetensors");
  auto entries = gpt_entries(layout, groups, "transformer.");
  for (auto& e : entries)
    if (e.name == "transformer.h.0.attn.c_attn.weight")
      e.shape = {24, 8};  // [out, in]: a Linear, not a Conv1D
  write_safetensors(path, entries);
  std::vector<std::vector<float>> loaded;
  expect_error([&] { load_gpt_safetensors(path, layout, loaded); },
               {path, "'transformer.h.0.attn.c_attn.weight'", "has shape [24, 8]", "expects [8, 24]"});
}

TEST_F(Safetensors, RefusesAnUnsupportedDtype) {
  const auto path = dir.file("i64.safetensors");
  auto entries = gpt_entries(layout, groups, "transformer.");
  std::vector<std::int64_t> ints(16 * 8, 3);
  for (auto& e : entries)
    if (e.name == "transformer.wpe.weight")
      e = {e.name, SafetensorsDType::I64, e.shape, ints.data(), nullptr};
  write_safetensors(path, entries);
  std::vector<std::vector<float>> loaded;
  expect_error([&] { load_gpt_safetensors(path, layout, loaded); },
               {path, "'transformer.wpe.weight'", "dtype I64", "F32, F16 or BF16"});
}

TEST_F(Safetensors, RefusesAnUnexpectedTensor) {
  const auto path = dir.file("extra.safetensors");
  auto entries = gpt_entries(layout, groups, "transformer.");
  std::vector<float> extra(8, 1.0f);
  entries.push_back({"transformer.h.2.ln_1.weight", SafetensorsDType::F32, {8}, nullptr, extra.data()});
  write_safetensors(path, entries);
  std::vector<std::vector<float>> loaded;
  expect_error([&] { load_gpt_safetensors(path, layout, loaded); },
               {path, "'transformer.h.2.ln_1.weight'", "does not have"});
}

TEST_F(Safetensors, RefusesATensorGivenWithAndWithoutThePrefix) {
  const auto path = dir.file("dup.safetensors");
  auto entries = gpt_entries(layout, groups, "transformer.");
  std::vector<float> lnf(8, 1.0f);
  entries.push_back({"ln_f.bias", SafetensorsDType::F32, {8}, nullptr, lnf.data()});
  write_safetensors(path, entries);
  std::vector<std::vector<float>> loaded;
  expect_error([&] { load_gpt_safetensors(path, layout, loaded); },
               {path, "'ln_f.bias'", "'transformer.ln_f.bias'"});
}

TEST_F(Safetensors, RefusesAMissingFileAndAnUnwritableFolder) {
  std::vector<std::vector<float>> loaded;
  const auto missing = dir.file("nope.safetensors");
  expect_error([&] { load_gpt_safetensors(missing, layout, loaded); }, {missing, "cannot open"});
  const auto bad = dir.file("no/such/folder/m.safetensors");
  expect_error([&] { save_gpt_safetensors(bad, layout, pointers(groups), DType::f32); },
               {bad, "cannot create"});
  expect_error([&] { save_gpt_safetensors(dir.file("m"), layout, pointers(groups), DType::i32); }, {"int32"});
}

}  // namespace
}  // namespace tz
