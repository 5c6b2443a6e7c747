// Token files: llm.c's format (256 int32 header: magic 20240520, version 1, token count; then uint16
// tokens) and nanoGPT's raw uint16 arrays (no header), told apart by the first int32.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tz {

inline constexpr std::int32_t kTokenFileMagic = 20240520;
inline constexpr std::int32_t kTokenFileVersion = 1;  // uint16 (GPT-2) tokens; llm.c's version 2 is uint32
inline constexpr std::size_t kTokenFileHeaderInts = 256;

// Reads either format. A file whose first int32 is not the magic is raw uint16 (so an empty file
// reads as no tokens). Throws naming the file when it is missing, has another version, its count
// disagrees with its size, or a raw file has an odd number of bytes.
std::vector<std::uint16_t> read_token_file(const std::string& path);

// Writes llm.c's format through `path + ".tmp"` and a rename.
void write_token_file(const std::string& path, const std::vector<std::uint16_t>& tokens);

}  // namespace tz
