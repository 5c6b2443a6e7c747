// The byte-level tokenizer: vocabulary 256, each token is one byte's value. Needs no vocabulary file,
// so any text trains the tiny models out of the box.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tz {

inline constexpr int kByteVocabSize = 256;

std::vector<std::uint32_t> encode_bytes(std::string_view text);
// Throws naming the position of a token >= 256.
std::string decode_bytes(const std::vector<std::uint32_t>& tokens);

}  // namespace tz
