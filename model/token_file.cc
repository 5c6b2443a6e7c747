// Reading and writing llm.c token files (uint16 and uint32) and nanoGPT raw uint16 token files.
#include "model/token_file.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "model/checkpoint_tree.h"
#include "model/file_io.h"
#include "model/file_signature.h"

namespace tz {
namespace {

// All formats are little-endian on disk and read straight into memory.
static_assert(std::endian::native == std::endian::little, "token files assume a little-endian host");

constexpr std::uint64_t kHeaderBytes = kTokenFileHeaderInts * sizeof(std::int32_t);
// uint16 tokens are widened (on read) or narrowed (on write) through a staging buffer of this many, so
// neither direction holds a second whole copy of the data.
constexpr std::size_t kStageTokens = std::size_t(1) << 20;

// Reads `count` uint16 tokens at `offset` of `f` into `out`, widening them.
void read_u16_widened(const InputFile& f, std::uint64_t offset, std::uint32_t* out, std::size_t count) {
  std::vector<std::uint16_t> stage(std::min(count, kStageTokens));
  for (std::size_t done = 0; done < count;) {
    const std::size_t n = std::min(count - done, kStageTokens);
    f.read_at(stage.data(), n * sizeof(std::uint16_t), offset + done * sizeof(std::uint16_t));
    std::copy(stage.begin(), stage.begin() + std::ptrdiff_t(n), out + done);
    done += n;
  }
}

// llm.c's header shape under a magic it does not have: the count at header[2] agrees with the size for
// 2- or 4-byte tokens and header[3..255] are all zero.
bool llmc_shaped(const std::string& head, std::uint64_t size) {
  if (head.size() < kHeaderBytes) return false;
  std::vector<std::int32_t> h(kTokenFileHeaderInts);
  std::memcpy(h.data(), head.data(), kHeaderBytes);
  const bool zeros = std::all_of(h.begin() + 3, h.end(), [](std::int32_t x) { return x == 0; });
  const std::uint64_t n = std::uint64_t(std::max(h[2], 0)), body = size - kHeaderBytes;
  return zeros && h[2] >= 0 && (body == 2 * n || body == 4 * n);
}

// The header rule (docs/data.md#token-files), for a file whose first int32 is neither token magic: what
// the file could be instead, or "" when its first bytes match no known format (only then is it raw
// uint16 tokens).
std::string other_format(const std::string& path, const InputFile& f, std::int32_t first) {
  std::string head(std::size_t(std::min<std::uint64_t>(f.size(), kHeaderBytes)), '\0');
  f.read_at(head.data(), head.size(), 0);
  if (first >= kLlmcMagicLow && first <= kLlmcMagicHigh) return describe_llmc_magic(first);
  if (llmc_shaped(head, f.size()))
    return "an llm.c token-file header with magic " + std::to_string(first) +
           ", which tierzero does not know (its count agrees with the size and header[3..255] all zero)";
  if (std::string s = signature_format(head, f.size()); !s.empty()) return s;
  if (is_checkpoint_data_file(path)) return "a tierzero checkpoint data file (rank-NNNNN.bin beside a manifest.json)";
  return "";
}

}  // namespace

std::vector<std::uint32_t> read_token_file(const std::string& path) {
  InputFile f(path, "token file");
  const std::uint64_t size = f.size();
  std::int32_t first = 0;
  if (size >= 4) f.read_at(&first, 4, 0);

  if (first != kTokenFileMagic && first != kTokenFileMagic32) {
    const std::string other = other_format(path, f, first);
    TZ_CHECK(other.empty(), "token file '", path, "' looks like ", other,
             ", not a token file: it is not read as raw uint16 tokens, which tierzero takes only when its first bytes "
             "match no known "
             "format (docs/data.md#the-header-rule); give an llm.c token file (magic ", kTokenFileMagic, " version ",
             kTokenFileVersion, ", or ", kTokenFileMagic32, " version ", kTokenFileVersion32,
             ") or a raw uint16 file, e.g. from `tierzero data prepare` or llm.c's scripts");
    // nanoGPT's train.bin: a bare array of uint16.
    TZ_CHECK(size % 2 == 0, "token file '", path, "' has no llm.c header (magic ", kTokenFileMagic, " or ",
             kTokenFileMagic32, ") so it is read as raw uint16 tokens, but its length ", size,
             " bytes is odd; the file is truncated or not a token file");
    std::vector<std::uint32_t> tokens(size / 2);
    read_u16_widened(f, 0, tokens.data(), tokens.size());
    return tokens;
  }

  TZ_CHECK(size >= kHeaderBytes, "token file '", path, "' starts with the llm.c magic ", first,
           " but is only ", size, " bytes, shorter than the ", kHeaderBytes,
           "-byte header; the file is truncated");
  std::vector<std::int32_t> header(kTokenFileHeaderInts);
  f.read_at(header.data(), kHeaderBytes, 0);
  const bool wide = first == kTokenFileMagic32;
  const std::int32_t want_version = wide ? kTokenFileVersion32 : kTokenFileVersion;
  TZ_CHECK(header[1] == want_version, "token file '", path, "' has llm.c magic ", first, " with version ",
           header[1], ", but tierzero reads version ", want_version, " under that magic (magic ",
           kTokenFileMagic, " version ", kTokenFileVersion, ": uint16 GPT-2 tokens; magic ",
           kTokenFileMagic32, " version ", kTokenFileVersion32,
           ": uint32 Llama 3 tokens); the header is damaged or from another tool: "
           "re-tokenise the data with llm.c's scripts or `tierzero data prepare`");
  TZ_CHECK(header[2] >= 0, "token file '", path, "' declares a negative token count ", header[2]);
  const std::uint64_t count = std::uint64_t(header[2]);
  const std::uint64_t width = wide ? sizeof(std::uint32_t) : sizeof(std::uint16_t);
  TZ_CHECK(size == kHeaderBytes + width * count, "token file '", path, "' declares ", count, " ",
           wide ? "uint32" : "uint16", " tokens (", kHeaderBytes + width * count,
           " bytes with the header) but is ", size,
           " bytes; the file is truncated or was written incompletely");
  std::vector<std::uint32_t> tokens(count);
  if (wide)
    f.read_at(tokens.data(), width * count, kHeaderBytes);
  else
    read_u16_widened(f, kHeaderBytes, tokens.data(), tokens.size());
  return tokens;
}

void write_token_file(const std::string& path, const std::vector<std::uint32_t>& tokens, TokenWidth width) {
  TZ_CHECK(tokens.size() <= std::size_t(std::numeric_limits<std::int32_t>::max()), "token file '", path,
           "': ", tokens.size(), " tokens do not fit llm.c's int32 count; split the data into shards");
  constexpr std::uint32_t kMax16 = std::numeric_limits<std::uint16_t>::max();
  const auto big = std::find_if(tokens.begin(), tokens.end(), [](std::uint32_t t) { return t > kMax16; });
  if (width == TokenWidth::automatic) width = big == tokens.end() ? TokenWidth::u16 : TokenWidth::u32;
  TZ_CHECK(width == TokenWidth::u32 || big == tokens.end(), "token file '", path, "': token ", *big,
           " at position ", big - tokens.begin(), " does not fit the uint16 format asked for (magic ",
           kTokenFileMagic, "); write the uint32 format (magic ", kTokenFileMagic32, ")");

  const bool wide = width == TokenWidth::u32;
  std::vector<std::int32_t> header(kTokenFileHeaderInts, 0);
  header[0] = wide ? kTokenFileMagic32 : kTokenFileMagic;
  header[1] = wide ? kTokenFileVersion32 : kTokenFileVersion;
  header[2] = std::int32_t(tokens.size());
  AtomicOutputFile out(path, "token file");
  out.write(header.data(), kHeaderBytes);
  if (wide) {
    out.write(tokens.data(), tokens.size() * sizeof(std::uint32_t));
  } else {
    std::vector<std::uint16_t> stage(std::min(tokens.size(), kStageTokens));
    for (std::size_t done = 0; done < tokens.size();) {
      const std::size_t n = std::min(tokens.size() - done, kStageTokens);
      for (std::size_t i = 0; i < n; ++i) stage[i] = std::uint16_t(tokens[done + i]);
      out.write(stage.data(), n * sizeof(std::uint16_t));
      done += n;
    }
  }
  out.commit();
}

}  // namespace tz
