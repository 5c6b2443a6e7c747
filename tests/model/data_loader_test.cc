// Tests model/data_loader.h: llm.c's batching rule per rank, the wrap point, the portable shuffle,
// the checks on the data, and 16- and 32-bit token files through the loader.
#include "model/data_loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "core/error.h"
#include "model/token_file.h"
#include "tests/common/test_dir.h"

namespace tz {
namespace {

// Token i is i (mod vocab), so a batch's contents say exactly where it was read from.
std::vector<std::uint32_t> counting_tokens(std::size_t n) {
  std::vector<std::uint32_t> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = std::uint32_t(i % 65536);
  return t;
}

constexpr int kVocab = 65536;

struct Batch {
  std::vector<std::int32_t> inputs, targets;
  bool operator==(const Batch&) const = default;
};

Batch next(DataLoader& dl, int B, int T) {
  Batch b{std::vector<std::int32_t>(std::size_t(B) * T), std::vector<std::int32_t>(std::size_t(B) * T)};
  dl.next_batch(b.inputs.data(), b.targets.data());
  return b;
}

// llm.c's DataLoader (train_gpt2.c, before shards): check-wrap, read at position + rank*B*T, advance.
struct LlmcReference {
  std::size_t B, T, rank, world, n, pos = 0;
  template <typename Token>
  Batch next(const std::vector<Token>& tokens) {
    if (pos + world * B * T + 1 > n) pos = 0;
    Batch b;
    for (std::size_t i = 0; i < B * T; ++i) {
      b.inputs.push_back(std::int32_t(tokens[pos + rank * B * T + i]));
      b.targets.push_back(std::int32_t(tokens[pos + rank * B * T + i + 1]));
    }
    pos += world * B * T;
    return b;
  }
};

TEST(DataLoader, WindowsFollowLlmcForOneRank) {
  const int B = 2, T = 8;  // global batch 16
  for (std::size_t n : {17u, 96u, 97u, 100u, 113u}) {
    SCOPED_TRACE("tokens " + std::to_string(n));
    auto tokens = counting_tokens(n);
    DataLoader dl(tokens, B, T, 0, 1, 0, false, kVocab, "mem");
    LlmcReference ref{2, 8, 0, 1, n};
    EXPECT_EQ(dl.batches_per_epoch(), (n - 1) / 16);
    EXPECT_EQ(dl.num_tokens(), n);
    for (int step = 0; step < 20; ++step) ASSERT_EQ(next(dl, B, T), ref.next(tokens)) << "step " << step;
  }
}

TEST(DataLoader, FirstBatchIsTheFirstBTPlusOneTokens) {
  DataLoader dl(counting_tokens(40), 2, 4, 0, 1, 0, false, kVocab, "mem");
  Batch b = next(dl, 2, 4);
  EXPECT_EQ(b.inputs, (std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(b.targets, (std::vector<std::int32_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  b = next(dl, 2, 4);
  EXPECT_EQ(b.inputs.front(), 8);
  EXPECT_EQ(b.targets.back(), 16);
}

TEST(DataLoader, WrapsToTheStartWhenTheNextBatchWouldRunPastTheEnd) {
  // 49 tokens, global batch 16: windows at 0, 16, 32 (32 + 16 + 1 = 49 fits exactly), then back to 0.
  DataLoader dl(counting_tokens(49), 2, 8, 0, 1, 0, false, kVocab, "mem");
  EXPECT_EQ(dl.batches_per_epoch(), 3u);
  std::vector<std::int32_t> starts;
  for (int i = 0; i < 5; ++i) starts.push_back(next(dl, 2, 8).inputs.front());
  EXPECT_EQ(starts, (std::vector<std::int32_t>{0, 16, 32, 0, 16}));
  EXPECT_EQ(dl.epoch(), 1u);
  // One token fewer: the window at 32 would need token 48, so it wraps after 16.
  DataLoader short_dl(counting_tokens(48), 2, 8, 0, 1, 0, false, kVocab, "mem");
  starts.clear();
  for (int i = 0; i < 3; ++i) starts.push_back(next(short_dl, 2, 8).inputs.front());
  EXPECT_EQ(starts, (std::vector<std::int32_t>{0, 16, 0}));
}

TEST(DataLoader, FourRanksTogetherReadTheOneRankGlobalBatch) {
  const int B = 2, T = 4, world = 4;
  for (bool shuffle : {false, true}) {
    SCOPED_TRACE(shuffle ? "shuffled" : "sequential");
    auto tokens = counting_tokens(300);
    DataLoader whole(tokens, world * B, T, 0, 1, 7, shuffle, kVocab, "mem");
    std::vector<DataLoader> ranks;
    for (int r = 0; r < world; ++r) ranks.emplace_back(tokens, B, T, r, world, 7, shuffle, kVocab, "mem");
    EXPECT_EQ(ranks[0].batches_per_epoch(), whole.batches_per_epoch());
    for (std::size_t step = 0; step < 3 * whole.batches_per_epoch() + 2; ++step) {  // across epochs and wraps
      Batch global = next(whole, world * B, T);
      for (int r = 0; r < world; ++r) {
        Batch mine = next(ranks[r], B, T);
        const auto at = global.inputs.begin() + r * B * T;
        ASSERT_TRUE(std::equal(mine.inputs.begin(), mine.inputs.end(), at))
            << "step " << step << " rank " << r;
        ASSERT_TRUE(std::equal(mine.targets.begin(), mine.targets.end(), global.targets.begin() + r * B * T))
            << "step " << step << " rank " << r;
      }
    }
  }
}

// The window (by its first token) of each batch over `epochs` epochs.
std::vector<std::size_t> window_order(std::uint64_t seed, std::size_t epochs, std::size_t n_tokens = 161) {
  DataLoader dl(counting_tokens(n_tokens), 2, 8, 0, 1, seed, true, kVocab, "mem");
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < epochs * dl.batches_per_epoch(); ++i)
    order.push_back(std::size_t(next(dl, 2, 8).inputs.front()) / 16);
  return order;
}

TEST(DataLoader, ShuffleVisitsEveryWindowOncePerEpochInASeededOrder) {
  auto a = window_order(42, 3);
  ASSERT_EQ(a.size(), 30u);  // 10 windows per epoch
  for (std::size_t e = 0; e < 3; ++e) {
    std::set<std::size_t> seen(a.begin() + 10 * e, a.begin() + 10 * (e + 1));
    EXPECT_EQ(seen.size(), 10u) << "epoch " << e;
    EXPECT_EQ(*seen.rbegin(), 9u);
  }
  EXPECT_EQ(window_order(42, 3), a);                                    // deterministic
  EXPECT_NE(window_order(43, 3), a);                                    // another seed, another order
  EXPECT_FALSE(std::equal(a.begin(), a.begin() + 10, a.begin() + 10));  // each epoch reshuffles
  // Pinned (and checked against an independent Python mt19937_64): the generator and our Fisher-Yates
  // are fully specified, so this order holds on every standard library.
  EXPECT_EQ(std::vector<std::size_t>(a.begin(), a.begin() + 10),
            (std::vector<std::size_t>{9, 6, 2, 0, 1, 4, 3, 8, 5, 7}));
}

TEST(DataLoader, ResetAndSeekReplayTheSameBatches) {
  DataLoader dl(counting_tokens(161), 2, 8, 0, 1, 5, true, kVocab, "mem");
  std::vector<Batch> first;
  for (int i = 0; i < 14; ++i) first.push_back(next(dl, 2, 8));
  dl.reset();
  EXPECT_EQ(next(dl, 2, 8), first[0]);
  dl.seek(1, 2);  // epoch 1, batch 2: the 13th batch overall
  EXPECT_EQ(next(dl, 2, 8), first[12]);
  EXPECT_EQ(dl.epoch(), 1u);
  EXPECT_EQ(dl.batch_index(), 3u);
  EXPECT_THROW(dl.seek(0, 10), Error);
}

TEST(DataLoader, RefusesATokenOutsideTheVocabularyNamingItsPosition) {
  auto tokens = counting_tokens(100);
  for (auto& t : tokens) t %= 200;
  tokens[37] = 300;
  try {
    DataLoader dl(tokens, 2, 8, 0, 1, 0, false, 256, "data/train.bin");
    FAIL() << "expected a tz::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("data/train.bin"), std::string::npos) << msg;
    EXPECT_NE(msg.find("token 300 at position 37"), std::string::npos) << msg;
  }
}

TEST(DataLoader, RefusesTooFewTokensForOneGlobalBatch) {
  try {
    DataLoader dl(counting_tokens(64), 2, 8, 1, 4, 0, false, kVocab, "tiny.bin");  // needs 4*2*8+1 = 65
    FAIL() << "expected a tz::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("tiny.bin' holds 64 tokens"), std::string::npos) << msg;
    EXPECT_NE(msg.find("= 65"), std::string::npos) << msg;
  }
  EXPECT_THROW(DataLoader(counting_tokens(100), 2, 8, 4, 4, 0, false, kVocab, "x"),
               Error);  // rank out of range
}

// Qwen2.5's vocabulary: the largest the tests use, past both 65,536 and Llama 3's 128,256.
constexpr int kQwenVocab = 151936;

// Writes `tokens` as llm.c writes them: magic, version, count, 253 zeros, then the tokens.
template <typename Token>
void write_llmc(const std::string& path, std::int32_t magic, std::int32_t version,
                const std::vector<Token>& tokens) {
  std::vector<std::int32_t> h(256, 0);
  h[0] = magic, h[1] = version, h[2] = std::int32_t(tokens.size());
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(h.data()), 1024);
  f.write(reinterpret_cast<const char*>(tokens.data()), std::streamsize(tokens.size() * sizeof(Token)));
}

TEST(DataLoader, AUint32FileWithAQwenVocabularyGivesItsTokensExactly) {
  tz::testing::TestDir dir;
  const auto path = dir.file("qwen.bin");
  // 17 tokens: one window of B*T = 8 plus its last target, then a second window, then 0 left over.
  const std::vector<std::uint32_t> tokens{0,      65535,  65536, 128255, 151935, 1,      70000, 151934, 2,
                                          100000, 128256, 3,     65537,  4,      151935, 5,     131072};
  write_llmc(path, 20240801, 7, tokens);
  DataLoader dl(read_token_file(path), 2, 4, 0, 1, 0, false, kQwenVocab, path);
  EXPECT_EQ(dl.num_tokens(), 17u);
  EXPECT_EQ(dl.batches_per_epoch(), 2u);
  Batch b = next(dl, 2, 4);
  EXPECT_EQ(b.inputs, (std::vector<std::int32_t>{0, 65535, 65536, 128255, 151935, 1, 70000, 151934}));
  EXPECT_EQ(b.targets, (std::vector<std::int32_t>{65535, 65536, 128255, 151935, 1, 70000, 151934, 2}));
  b = next(dl, 2, 4);
  EXPECT_EQ(b.inputs, (std::vector<std::int32_t>{2, 100000, 128256, 3, 65537, 4, 151935, 5}));
  EXPECT_EQ(b.targets, (std::vector<std::int32_t>{100000, 128256, 3, 65537, 4, 151935, 5, 131072}));
  EXPECT_EQ(next(dl, 2, 4), (Batch{{0, 65535, 65536, 128255, 151935, 1, 70000, 151934},
                                   {65535, 65536, 128255, 151935, 1, 70000, 151934, 2}}));  // wrapped
}

TEST(DataLoader, AUint16FileGivesTheSameBatchesAsItAlwaysDid) {
  tz::testing::TestDir dir;
  const auto path = dir.file("gpt2.bin");
  // GPT-2-like tokens up to the top of uint16; llm.c's reference reads them as uint16.
  std::vector<std::uint16_t> tokens(203);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = std::uint16_t((i * 40503u + 7) % 65536);
  write_llmc(path, 20240520, 1, tokens);
  std::vector<std::uint32_t> read = read_token_file(path);
  ASSERT_EQ(read.size(), tokens.size());
  EXPECT_TRUE(std::equal(read.begin(), read.end(), tokens.begin()));
  const int B = 3, T = 5, world = 2;
  for (int rank = 0; rank < world; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    DataLoader dl(read, B, T, rank, world, 0, false, 65536, path);
    LlmcReference ref{B, T, std::size_t(rank), world, tokens.size()};
    for (int step = 0; step < 15; ++step) ASSERT_EQ(next(dl, B, T), ref.next(tokens)) << "step " << step;
  }
  // Pinned: rank 0's first window, token i = (40503 i + 7) mod 65536.
  DataLoader dl(read, 1, 4, 0, 1, 0, false, 65536, path);
  const Batch b = next(dl, 1, 4);
  EXPECT_EQ(b.inputs, (std::vector<std::int32_t>{7, 40510, 15477, 55980}));
  EXPECT_EQ(b.targets, (std::vector<std::int32_t>{40510, 15477, 55980, 30947}));
}

TEST(DataLoader, RefusesATokenOutsideTheVocabularyInAUint32FileNamingItsPosition) {
  tz::testing::TestDir dir;
  const auto path = dir.file("too_big.bin");
  std::vector<std::uint32_t> tokens = counting_tokens(100);
  for (auto& t : tokens) t += 150000;
  tokens[41] = std::uint32_t(kQwenVocab);  // one past Qwen2.5's last token
  write_token_file(path, tokens);
  try {
    DataLoader dl(read_token_file(path), 2, 8, 0, 1, 0, false, kQwenVocab, path);
    FAIL() << "expected a tz::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("token 151936 at position 41"), std::string::npos) << msg;
    EXPECT_NE(msg.find("vocabulary of 151936"), std::string::npos) << msg;
  }
  // The same file fits a vocabulary one larger.
  EXPECT_EQ(DataLoader(read_token_file(path), 2, 8, 0, 1, 0, false, kQwenVocab + 1, path).num_tokens(), 100u);
}

}  // namespace
}  // namespace tz
