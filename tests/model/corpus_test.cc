// Tests model/corpus.h: the default Debian corpus and byte-level train/val preparation.
#include "model/corpus.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "model/byte_tokenizer.h"
#include "model/token_file.h"
#include "tests/common/test_dir.h"

namespace tz {
namespace {

using tz::testing::TestDir;

TEST(Corpus, DefaultFilesAreSortedReadableRegularFiles) {
  auto files = default_corpus_files();
  ASSERT_FALSE(files.empty());
  EXPECT_TRUE(std::is_sorted(files.begin(), files.end()));
  for (const auto& f : files) {
    EXPECT_EQ(std::filesystem::path(f).parent_path(), kDefaultCorpusDir) << f;
    EXPECT_FALSE(std::filesystem::is_symlink(f)) << f;
    std::ifstream in(f, std::ios::binary);
    EXPECT_TRUE(in.good()) << f;
    char c;
    EXPECT_TRUE(in.get(c)) << f << " is empty or unreadable";
  }
}

class PrepareByteCorpus : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(a_, std::ios::binary) << "hello";     // 5 bytes
    std::ofstream(b_, std::ios::binary) << "world!\n";  // 7 bytes, already ends in a newline
  }
  TestDir dir;
  std::string a_ = dir.file("a.txt"), b_ = dir.file("b.txt");
  std::string train_ = dir.file("train.bin"), val_ = dir.file("val.bin");
};

TEST_F(PrepareByteCorpus, ConcatenatesWithANewlineAfterEachFileAndSplitsOffTheTail) {
  // "hello\n" + "world!\n\n" = 14 tokens; floor(14 * 0.25) = 3 go to validation.
  PreparedCorpus p = prepare_byte_corpus({a_, b_}, train_, val_, 0.25);
  EXPECT_EQ(p.train_tokens, 11u);
  EXPECT_EQ(p.val_tokens, 3u);
  EXPECT_EQ(read_token_file(train_), encode_bytes("hello\nworld"));
  EXPECT_EQ(read_token_file(val_), encode_bytes("!\n\n"));
}

TEST_F(PrepareByteCorpus, WithoutAValidationFileEverythingTrains) {
  PreparedCorpus p = prepare_byte_corpus({b_, a_}, train_, "", 0.5);
  EXPECT_EQ(p.train_tokens, 14u);
  EXPECT_EQ(p.val_tokens, 0u);
  EXPECT_EQ(decode_bytes(read_token_file(train_)), "world!\n\nhello\n");
  EXPECT_FALSE(std::filesystem::exists(val_));
}

TEST_F(PrepareByteCorpus, RefusesAMissingInputAndAnEmptySplit) {
  const auto missing = dir.file("missing.txt");
  try {
    prepare_byte_corpus({a_, missing}, train_, val_, 0.1);
    ADD_FAILURE() << "expected a tz::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  EXPECT_THROW(prepare_byte_corpus({a_}, train_, val_, 0.01), Error);  // floor(6 * 0.01) = 0 tokens
  EXPECT_THROW(prepare_byte_corpus({a_}, train_, val_, 1.0), Error);
}

}  // namespace
}  // namespace tz
