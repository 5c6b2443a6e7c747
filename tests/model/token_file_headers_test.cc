// Tests the header rule of model/token_file.h (docs/data.md#token-files): a file is read as raw uint16
// tokens only when its first bytes match no known format; a header near a known one, or another known
// format, is refused naming what it could be.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "model/token_file.h"
#include "tests/common/error_message.h"
#include "tests/common/test_dir.h"

namespace tz {
namespace {

using testing::error_message;

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

std::string int32s(const std::vector<std::int32_t>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

// A 1024-byte llm.c-style header (magic, version, count, then zeros) and `body` bytes after it.
std::string llmc(std::int32_t magic, std::int32_t version, std::int32_t count, std::size_t body) {
  std::vector<std::int32_t> h(256, 0);
  h[0] = magic, h[1] = version, h[2] = count;
  return int32s(h) + std::string(body, '\x07');
}

// The bytes of a small safetensors file: an 8-byte little-endian header length, then the JSON header.
std::string safetensors_bytes() {
  const std::string json = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::uint64_t n = json.size();
  return std::string(reinterpret_cast<const char*>(&n), 8) + json + std::string(8, '\0');
}

struct Case {
  const char* name;
  std::string bytes;
  std::vector<std::string> says;  // in the refusal
};

TEST(TokenFileHeaders, NearMissesAndOtherFormatsAreRefusedNamingWhatTheyCouldBe) {
  const std::vector<Case> cases = {
      {"one digit from the uint32 magic", llmc(20240802, 7, 100, 400),
       {"20240802", "20240801", "llm.c uint32 tokens", "not read as raw uint16"}},
      {"one digit from the uint16 magic", llmc(20240521, 1, 100, 200), {"20240521", "20240520", "llm.c uint16 tokens"}},
      {"llm.c's GPT-2 model file", llmc(20240326, 3, 1024, 64), {"20240326", "llm.c GPT-2 model"}},
      {"llm.c's tokenizer", llmc(20240328, 2, 50257, 64), {"20240328", "llm.c tokenizer"}},
      {"llm.c's training state", llmc(20240527, 1, 1, 64), {"20240527", "llm.c training state"}},
      {"llm.c's debug state", llmc(20240327, 2, 1, 64), {"20240327", "llm.c debug state"}},
      {"an llm.c header with an unknown magic", llmc(123456, 1, 100, 200),
       {"llm.c token-file header", "magic 123456", "header[3..255] all zero"}},
      {"an llm.c uint32 header with an unknown magic", llmc(777, 7, 50, 200), {"llm.c token-file header", "magic 777"}},
      {"a safetensors file", safetensors_bytes(), {"a safetensors file"}},
      {"a NumPy array", std::string("\x93NUMPY\x01\x00", 8) + std::string(120, ' '), {"a NumPy .npy file"}},
      {"a zip archive (a .npz or PyTorch file)", std::string("PK\x03\x04", 4) + std::string(60, '\0'), {"a zip archive"}},
      {"a gzip file", std::string("\x1f\x8b\x08\x00", 4) + std::string(60, '\0'), {"a gzip file"}},
      {"a GGUF model", std::string("GGUF\x03\x00\x00\x00", 8) + std::string(56, '\0'), {"a GGUF model"}},
  };
  for (const Case& c : cases) {
    testing::TestDir dir;
    const std::string path = dir.file("train.bin");
    write_bytes(path, c.bytes);
    const std::string m = error_message([&] { read_token_file(path); });
    EXPECT_TRUE(has(m, "token file '" + path + "'")) << c.name << ": " << m;
    for (const std::string& s : c.says) EXPECT_TRUE(has(m, s)) << c.name << ": '" << s << "' not in: " << m;
    EXPECT_TRUE(has(m, "docs/data.md")) << c.name << ": " << m;
  }
}

TEST(TokenFileHeaders, ACheckpointDataFileIsRefused) {
  testing::TestDir dir;
  const std::string step = dir.file("step-00000002");
  std::filesystem::create_directories(step);
  write_bytes(step + "/manifest.json", "{}");
  write_bytes(step + "/rank-00000.bin", std::string(4096, '\x01'));
  const std::string m = error_message([&] { read_token_file(step + "/rank-00000.bin"); });
  EXPECT_TRUE(has(m, "a tierzero checkpoint data file")) << m;
}

// Raw uint16 files whose first tokens fall outside every rule still read, as nanoGPT writes them.
TEST(TokenFileHeaders, RawUint16FilesThatMatchNoFormatAreRead) {
  testing::TestDir dir;
  const std::string path = dir.file("train.bin");
  for (const std::vector<std::uint16_t>& tokens :
       {std::vector<std::uint16_t>{50256, 464, 2068, 7586},   // GPT-2 text
        std::vector<std::uint16_t>{0x7a80, 0x0134, 1, 2},      // first int32 20216448: before 2024's magics
        std::vector<std::uint16_t>{0x0ad0, 0x0135, 9, 9, 9},   // 20253392: after them
        std::vector<std::uint16_t>{0x4b50, 0x0404, 3, 4}}) {   // "PK\x04\x04": not a zip entry
    write_bytes(path, std::string(reinterpret_cast<const char*>(tokens.data()), tokens.size() * 2));
    const std::vector<std::uint32_t> got = read_token_file(path);
    ASSERT_EQ(got.size(), tokens.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], tokens[i]);
  }
}

}  // namespace
}  // namespace tz
