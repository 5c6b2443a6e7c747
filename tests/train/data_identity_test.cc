// A token file's identity: its size and the XXH3-64 of 64 evenly spaced 64 KiB blocks from its first byte
// to its last, so that a change in any sampled block (not only the first and last MiB, as before) is seen;
// and checkpoints that recorded the older first-and-last-MiB identity still resume.
#include "train/data_identity.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/error.h"
#include "model/token_file.h"
#include "tests/common/test_dir.h"
#include "train/trainer.h"

namespace tz {
namespace {

void write_bytes(const std::string& path, const std::vector<char>& b) {
  std::ofstream(path, std::ios::binary).write(b.data(), std::streamsize(b.size()));
}

std::vector<char> pattern(std::size_t n) {
  std::vector<char> b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = char((i * 2654435761u) >> 13);
  return b;
}

TEST(DataIdentity, SeesAChangeInTheFirstTheLastAndAMiddleBlock) {
  testing::TestDir d;
  const std::string f = d.file("big.bin");
  const std::uint64_t B = kIdentityBlockBytes, K = kIdentityBlocks, n = 2 * K * B + 12345;
  std::vector<char> b = pattern(n);
  write_bytes(f, b);
  const std::string base = data_identity(f), old = data_identity_first_last_mib(f);
  EXPECT_EQ(base.rfind(std::to_string(n) + " bytes, sampled xxh3 ", 0), 0u) << base;
  EXPECT_EQ(old.rfind(std::to_string(n) + " bytes, xxh3 ", 0), 0u) << old;
  const std::uint64_t q = (n - B) / (K - 1), r = (n - B) % (K - 1);
  for (std::uint64_t at : {std::uint64_t(0), n - 1, 32 * q + 32 * r / (K - 1) + B / 2, 17 * q + 17 * r / (K - 1)}) {
    b[at] ^= 1;
    write_bytes(f, b);
    EXPECT_NE(data_identity(f), base) << "a change at byte " << at << " was not seen";
    if (at > (1u << 20) && at < n - (1u << 20))
      EXPECT_EQ(data_identity_first_last_mib(f), old) << "the old identity reads byte " << at;
    b[at] ^= 1;
  }
  write_bytes(f, b);
  EXPECT_EQ(data_identity(f), base);
  // The same bytes under another name: the same identity.
  write_bytes(d.file("copy.bin"), b);
  EXPECT_EQ(data_identity(d.file("copy.bin")), base);
}

TEST(DataIdentity, AFileOfAtMostSixtyFourBlocksIsHashedWhole) {
  testing::TestDir d;
  const std::string f = d.file("small.bin");
  for (std::uint64_t n : {std::uint64_t(0), std::uint64_t(1), std::uint64_t(100000), kIdentityBlocks * kIdentityBlockBytes}) {
    std::vector<char> b = pattern(n);
    write_bytes(f, b);
    const std::string base = data_identity(f);
    EXPECT_EQ(base.rfind(std::to_string(n) + " bytes, sampled xxh3 ", 0), 0u) << base;
    for (std::uint64_t at = 0; n > 0 && at < n; at += n / 7 + 1) {
      b[at] ^= 4;
      write_bytes(f, b);
      EXPECT_NE(data_identity(f), base) << "a change at byte " << at << " of " << n << " was not seen";
      b[at] ^= 4;
    }
  }
  EXPECT_EQ(data_identity(""), "none");
  EXPECT_EQ(data_identity(kDefaultData), "default corpus");
  EXPECT_THROW(data_identity(d.file("missing.bin")), Error);
}

TEST(DataIdentity, ARecordingIsComparedInItsOwnFormat) {
  testing::TestDir d;
  const std::string f = d.file("t.bin");
  write_bytes(f, pattern(3 << 20));
  EXPECT_EQ(data_identity_as_recorded(data_identity_first_last_mib(f), f), data_identity_first_last_mib(f));
  EXPECT_EQ(data_identity_as_recorded(data_identity(f), f), data_identity(f));
  EXPECT_EQ(data_identity_as_recorded("default corpus", kDefaultData), "default corpus");
}

// A checkpoint whose manifest holds the identity the way checkpoints written before the sampled one did
// resumes on the same data, and is refused on other data.
TEST(DataIdentity, ACheckpointRecordingTheOldIdentityStillResumes) {
  testing::TestDir d;
  const std::string data = d.file("tokens.bin"), other = d.file("other.bin");
  std::vector<std::uint32_t> tokens(20000);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = std::uint32_t((i * 31) % 251);
  write_token_file(data, tokens);
  tokens[100] ^= 1;
  write_token_file(other, tokens);
  TrainOptions o;
  o.model = model_preset("tiny");
  o.steps = 2;
  o.log_every = 0;
  o.data = data;
  o.save_dir = d.file("ckpt");
  auto comm = make_self_comm();
  train(o, *comm, [](const std::string&) {});
  const std::string manifest = o.save_dir + "/step-00000002/manifest.json";
  nlohmann::json m = nlohmann::json::parse(std::ifstream(manifest));
  ASSERT_EQ(m["data"]["identity"], data_identity(data));
  m["data"]["identity"] = data_identity_first_last_mib(data);
  std::ofstream(manifest) << m.dump(1);
  o.steps = 3;
  o.resume = "latest";
  const TrainResult r = train(o, *comm, [](const std::string&) {});
  EXPECT_EQ(r.losses.size(), 1u) << "the resumed run trains step 3 only";
  o.resume = o.save_dir + "/step-00000002";  // the old identity, on other data
  o.data = other;
  try {
    train(o, *comm, [](const std::string&) {});
    ADD_FAILURE() << "resumed on other data";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("was trained on data"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tz
