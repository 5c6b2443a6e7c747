// Tests model/byte_tokenizer.h: every byte maps to itself and back.
#include "model/byte_tokenizer.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace tz {
namespace {

TEST(ByteTokenizer, EveryByteRoundTripsAsItsOwnValue) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  auto tokens = encode_bytes(all);
  ASSERT_EQ(tokens.size(), 256u);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(tokens[b], std::uint32_t(b));
  EXPECT_EQ(decode_bytes(tokens), all);
}

TEST(ByteTokenizer, EncodesUtf8AsItsBytes) {
  auto tokens = encode_bytes("h\xc3\xa9");  // "hé"
  EXPECT_EQ(tokens, (std::vector<std::uint32_t>{'h', 0xc3, 0xa9}));
}

TEST(ByteTokenizer, RefusesTokensThatAreNotBytes) {
  try {
    decode_bytes({65, 66, 256});
    FAIL() << "expected a tz::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token 256 at position 2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tz
