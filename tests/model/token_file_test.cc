// Tests model/token_file.h: llm.c token files and nanoGPT raw uint16 files, and their errors.
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

std::vector<std::int32_t> llmc_header(std::int32_t version, std::int32_t count) {
  std::vector<std::int32_t> h(256, 0);
  h[0] = 20240520, h[1] = version, h[2] = count;
  return h;
}

TEST(TokenFile, WritesLlmcFormatAndReadsItBack) {
  TestDir dir;
  const auto path = dir.file("t.bin");
  std::vector<std::uint16_t> tokens{0, 1, 50256, 65535, 7};
  write_token_file(path, tokens);
  EXPECT_EQ(std::filesystem::file_size(path), 1024u + 2 * tokens.size());
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << "left behind: " << e.path();

  std::ifstream f(path, std::ios::binary);
  std::vector<std::int32_t> header(256);
  f.read(reinterpret_cast<char*>(header.data()), 1024);
  EXPECT_EQ(header, llmc_header(1, 5));

  EXPECT_EQ(read_token_file(path), tokens);
}

TEST(TokenFile, ReadsRawUint16AsNanoGptWritesIt) {
  TestDir dir;
  const auto path = dir.file("train.bin");
  std::vector<std::uint16_t> tokens{15496, 11, 995, 0, 3};
  write_bytes(path, tokens.data(), tokens.size() * 2);
  EXPECT_EQ(read_token_file(path), tokens);
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
  expect_error([&] { read_token_file(path); }, {path, "version 2", "reads version 1"});
}

TEST(TokenFile, RefusesACountThatDisagreesWithTheSize) {
  TestDir dir;
  const auto path = dir.file("short.bin");
  write_token_file(path, {1, 2, 3, 4});
  std::filesystem::resize_file(path, 1024 + 6);
  expect_error([&] { read_token_file(path); }, {path, "declares 4 tokens", "but is 1030 bytes"});
  std::filesystem::resize_file(path, 100);
  expect_error([&] { read_token_file(path); }, {path, "shorter than the 1024-byte header"});
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
