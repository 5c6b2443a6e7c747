// What a file's first bytes say it is: llm.c's magic numbers and the signatures of the other formats a
// user might hand tierzero by mistake, so that a reader that tells formats apart by their header (token
// files: model/token_file.h) refuses a file of another format, or a near miss of its own, instead of
// taking it for raw data.
#pragma once

#include <cstdint>
#include <string>

namespace tz {

// llm.c's magics are dates of 2024: every int32 in this range is taken for an llm.c-style magic.
inline constexpr std::int32_t kLlmcMagicLow = 20240000, kLlmcMagicHigh = 20249999;

// What llm.c writes under `magic` ("llm.c uint16 tokens", "llm.c GPT-2 model", ...), or "" for none.
std::string llmc_magic_name(std::int32_t magic);

// An llm.c-style magic that is not the one a reader wanted: the known file it is ("an llm.c GPT-2 model file
// (magic 20240326)"), or for an unknown one the two nearest llm.c magics it could be a damaged copy of.
std::string describe_llmc_magic(std::int32_t magic);

// The format whose signature `head` (the file's first bytes, up to 1024) carries, for a file of `size`
// bytes: "a safetensors file ...", "a NumPy .npy file", "a zip archive ...", "a gzip file", "a GGUF
// model"; "" when none does.
std::string signature_format(const std::string& head, std::uint64_t size);

}  // namespace tz
