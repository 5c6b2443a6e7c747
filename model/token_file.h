// Token files: llm.c's two formats (256 int32 header: magic 20240520 version 1 with uint16 GPT-2 tokens,
// or magic 20240801 version 7 with uint32 Llama 3 tokens; count at header[2]) and nanoGPT's raw uint16
// arrays (no header), told apart by their first bytes; a file whose first bytes belong to another known
// format, or are a near miss of llm.c's, is refused (model/file_signature.h, docs/data.md#the-header-rule).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tz {

inline constexpr std::size_t kTokenFileHeaderInts = 256;
// llm.c's GPT-2 files: uint16 tokens.
inline constexpr std::int32_t kTokenFileMagic = 20240520;
inline constexpr std::int32_t kTokenFileVersion = 1;
// llm.c's Llama 3 files: uint32 tokens, for vocabularies past 65,536 (Llama 3's 128,256, Qwen2.5's 151,936).
inline constexpr std::int32_t kTokenFileMagic32 = 20240801;
inline constexpr std::int32_t kTokenFileVersion32 = 7;

// Reads any of the three formats into 32-bit tokens. uint16 files are widened on read, so they take
// twice their size in memory (a 10 GB uint16 file needs 20 GB): simpler than a width-dispatching
// accessor on the loader's per-token path, and tokens are small next to a model's state. A file whose
// first bytes match no known format is raw uint16 (so an empty file reads as no tokens). Throws naming the
// file when it is missing, has the wrong version for its magic, is shorter than the header, its count
// disagrees with its size, a raw file has an odd number of bytes, or its first bytes are another format's
// or a near miss of llm.c's (naming what it could be).
std::vector<std::uint32_t> read_token_file(const std::string& path);

enum class TokenWidth {
  automatic,  // uint16 when every token is < 65536 (what GPT-2 tools read), else uint32
  u16,        // llm.c's 20240520/v1; refuses a token >= 65536, naming its position
  u32,        // llm.c's 20240801/v7
};

// Writes llm.c's format of the given width through `path + ".tmp"` and a rename.
void write_token_file(const std::string& path, const std::vector<std::uint32_t>& tokens,
                      TokenWidth width = TokenWidth::automatic);

}  // namespace tz
