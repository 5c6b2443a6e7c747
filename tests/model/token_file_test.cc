// Tests model/token_file.h: llm.c token files (uint16 and uint32) and nanoGPT raw uint16 files, and their
// errors.
#include "model/token_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "tests/common/test_dir.h"

namespace tz {
namespace {

using tz::testing::TestDir;

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

void write_bytes(const std::string& path, const void* data, std::size_t n) {
  std::ofstream(path, std::ios::binary).write(static_cast<const char*>(data), std::streamsize(n));
}

std::vector<std::int32_t> llmc_header(std::int32_t version, std::int32_t count,
                                      std::int32_t magic = 20240520) {
  std::vector<std::int32_t> h(256, 0);
  h[0] = magic, h[1] = version, h[2] = count;
  return h;
}

std::vector<std::int32_t> read_header(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<std::int32_t> header(256);
  f.read(reinterpret_cast<char*>(header.data()), 1024);
  return header;
}

// An llm.c file written byte by byte here, independently of write_token_file.
template <typename Token>
void write_llmc(const std::string& path, std::int32_t magic, std::int32_t version,
                const std::vector<Token>& tokens) {
  auto h = llmc_header(version, std::int32_t(tokens.size()), magic);
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(h.data()), 1024);
  f.write(reinterpret_cast<const char*>(tokens.data()), std::streamsize(tokens.size() * sizeof(Token)));
}

// Tokens on both sides of 65,536, up to the last of Llama 3's (128,256) and Qwen2.5's (151,936) vocabularies.
const std::vector<std::uint32_t> kWideTokens{0, 65535, 65536, 128255, 151935};

TEST(TokenFile, WritesLlmcFormatAndReadsItBack) {
  TestDir dir;
  const auto path = dir.file("t.bin");
  std::vector<std::uint32_t> tokens{0, 1, 50256, 65535, 7};
  write_token_file(path, tokens);  // every token fits uint16: GPT-2's format, as before
  EXPECT_EQ(std::filesystem::file_size(path), 1024u + 2 * tokens.size());
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << "left behind: " << e.path();
  EXPECT_EQ(read_header(path), llmc_header(1, 5));

  std::ifstream f(path, std::ios::binary);
  f.seekg(1024);
  std::vector<std::uint16_t> on_disk(tokens.size());
  f.read(reinterpret_cast<char*>(on_disk.data()), std::streamsize(2 * tokens.size()));
  EXPECT_EQ(on_disk, (std::vector<std::uint16_t>{0, 1, 50256, 65535, 7}));

  EXPECT_EQ(read_token_file(path), tokens);
}

TEST(TokenFile, TokensPastUint16AreWrittenInLlmcUint32FormatAndReadBack) {
  TestDir dir;
  const auto path = dir.file("llama3.bin");
  write_token_file(path, kWideTokens);
  EXPECT_EQ(std::filesystem::file_size(path), 1024u + 4 * kWideTokens.size());
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << "left behind: " << e.path();
  EXPECT_EQ(read_header(path), llmc_header(7, 5, 20240801));

  std::ifstream f(path, std::ios::binary);
  f.seekg(1024);
  std::vector<std::uint32_t> on_disk(kWideTokens.size());
  f.read(reinterpret_cast<char*>(on_disk.data()), std::streamsize(4 * kWideTokens.size()));
  EXPECT_EQ(on_disk, kWideTokens);

  EXPECT_EQ(read_token_file(path), kWideTokens);
}

TEST(TokenFile, ReadsAnLlmcUint32FileWrittenByHand) {
  TestDir dir;
  const auto path = dir.file("hand.bin");
  write_llmc(path, 20240801, 7, kWideTokens);
  EXPECT_EQ(read_token_file(path), kWideTokens);
}

TEST(TokenFile, WritesTheWidthAskedFor) {
  TestDir dir;
  const std::vector<std::uint32_t> small{3, 65535, 0};
  write_token_file(dir.file("wide.bin"), small, TokenWidth::u32);
  EXPECT_EQ(std::filesystem::file_size(dir.file("wide.bin")), 1024u + 4 * 3);
  EXPECT_EQ(read_header(dir.file("wide.bin")), llmc_header(7, 3, 20240801));
  EXPECT_EQ(read_token_file(dir.file("wide.bin")), small);

  write_token_file(dir.file("narrow.bin"), small, TokenWidth::u16);
  EXPECT_EQ(read_header(dir.file("narrow.bin")), llmc_header(1, 3));
  EXPECT_EQ(read_token_file(dir.file("narrow.bin")), small);

  const auto path = dir.file("refused.bin");
  expect_error([&] { write_token_file(path, kWideTokens, TokenWidth::u16); },
               {path, "token 65536 at position 2", "does not fit the uint16 format", "20240801"});
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(TokenFile, ReadsRawUint16AsNanoGptWritesIt) {
  TestDir dir;
  const auto path = dir.file("train.bin");
  std::vector<std::uint16_t> tokens{15496, 11, 995, 0, 65535};
  write_bytes(path, tokens.data(), tokens.size() * 2);
  EXPECT_EQ(read_token_file(path), (std::vector<std::uint32_t>{15496, 11, 995, 0, 65535}));
}

TEST(TokenFile, EmptyTokenListRoundTrips) {
  TestDir dir;
  write_token_file(dir.file("e.bin"), {});
  EXPECT_TRUE(read_token_file(dir.file("e.bin")).empty());
}

TEST(TokenFile, RefusesAMissingFile) {
  TestDir dir;
  const auto path = dir.file("absent.bin");
  expect_error([&] { read_token_file(path); }, {"token file", path, "No such file"});
}

TEST(TokenFile, RefusesAnotherVersion) {
  TestDir dir;
  const auto path = dir.file("v2.bin");
  auto h = llmc_header(2, 0);
  write_bytes(path, h.data(), 1024);
  expect_error([&] { read_token_file(path); },
               {path, "magic 20240520 with version 2", "reads version 1 under that magic"});
}

TEST(TokenFile, RefusesAVersionThatBelongsToTheOtherMagic) {
  TestDir dir;
  // The uint32 magic with the uint16 version: which width is meant cannot be known.
  const auto path = dir.file("m32v1.bin");
  write_llmc(path, 20240801, 1, std::vector<std::uint32_t>{1, 2, 3});
  expect_error([&] { read_token_file(path); },
               {path, "magic 20240801 with version 1", "reads version 7 under that magic"});
  // And the other way round.
  const auto other = dir.file("m16v7.bin");
  write_llmc(other, 20240520, 7, std::vector<std::uint16_t>{1, 2, 3, 4});
  expect_error([&] { read_token_file(other); },
               {other, "magic 20240520 with version 7", "reads version 1 under that magic"});
}

TEST(TokenFile, RefusesACountThatDisagreesWithTheSize) {
  TestDir dir;
  const auto path = dir.file("short.bin");
  write_token_file(path, {1, 2, 3, 4});
  std::filesystem::resize_file(path, 1024 + 6);
  expect_error([&] { read_token_file(path); }, {path, "declares 4 uint16 tokens", "but is 1030 bytes"});
  std::filesystem::resize_file(path, 100);
  expect_error([&] { read_token_file(path); }, {path, "shorter than the 1024-byte header"});
}

TEST(TokenFile, RefusesAUint32FileWhoseSizeIsNotTheHeaderPlusFourBytesPerToken) {
  TestDir dir;
  const auto path = dir.file("wide.bin");
  write_token_file(path, kWideTokens);  // 1024 + 4*5 = 1044 bytes
  std::filesystem::resize_file(path, 1024 + 4 * 5 - 2);
  expect_error([&] { read_token_file(path); },
               {path, "declares 5 uint32 tokens (1044 bytes with the header)", "but is 1042 bytes"});
  std::filesystem::resize_file(path, 1024 + 4 * 5 + 4);  // a token too many
  expect_error([&] { read_token_file(path); }, {path, "declares 5 uint32 tokens", "but is 1048 bytes"});
  // uint16 tokens under the uint32 header: 1024 + 2*count.
  const auto mixed = dir.file("mixed.bin");
  write_llmc(mixed, 20240801, 7, std::vector<std::uint16_t>{1, 2, 3, 4, 5, 6});
  expect_error([&] { read_token_file(mixed); }, {mixed, "declares 6 uint32 tokens", "but is 1036 bytes"});
}

TEST(TokenFile, RefusesAUint32FileWithATruncatedHeader) {
  TestDir dir;
  const auto path = dir.file("cut.bin");
  write_token_file(path, kWideTokens);
  std::filesystem::resize_file(path, 512);
  expect_error([&] { read_token_file(path); },
               {path, "magic 20240801 but is only 512 bytes", "shorter than the 1024-byte header"});
  std::filesystem::resize_file(path, 4);  // the magic alone
  expect_error([&] { read_token_file(path); }, {path, "only 4 bytes", "truncated"});
}

TEST(TokenFile, RefusesARawFileWithAnOddLength) {
  TestDir dir;
  const auto path = dir.file("odd.bin");
  const char bytes[5] = {1, 0, 2, 0, 3};
  write_bytes(path, bytes, 5);
  expect_error([&] { read_token_file(path); }, {path, "raw uint16", "5 bytes is odd"});
}

}  // namespace
}  // namespace tz
