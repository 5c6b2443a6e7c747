// Byte-level encoding and decoding.
#include "model/byte_tokenizer.h"

#include "core/error.h"

namespace tz {

std::vector<std::uint32_t> encode_bytes(std::string_view text) {
  std::vector<std::uint32_t> out(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) out[i] = static_cast<unsigned char>(text[i]);
  return out;
}

std::string decode_bytes(const std::vector<std::uint32_t>& tokens) {
  std::string out(tokens.size(), '\0');
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    TZ_CHECK(tokens[i] < std::uint32_t(kByteVocabSize), "byte tokenizer: token ", tokens[i], " at position ",
             i, " is not a byte (the vocabulary is 0..255); these tokens come from another tokenizer");
    out[i] = static_cast<char>(static_cast<unsigned char>(tokens[i]));
  }
  return out;
}

}  // namespace tz
