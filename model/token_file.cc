// Reading and writing llm.c token files and nanoGPT raw uint16 token files.
#include "model/token_file.h"

#include <bit>
#include <limits>

#include "core/error.h"
#include "model/file_io.h"

namespace tz {

// Both formats are little-endian on disk and read straight into memory.
static_assert(std::endian::native == std::endian::little, "token files assume a little-endian host");

std::vector<std::uint16_t> read_token_file(const std::string& path) {
  InputFile f(path, "token file");
  const std::uint64_t size = f.size();
  std::int32_t first = 0;
  if (size >= 4) f.read_at(&first, 4, 0);

  if (first != kTokenFileMagic) {
    // nanoGPT's train.bin: a bare array of uint16.
    TZ_CHECK(size % 2 == 0, "token file '", path, "' has no llm.c header (magic ", kTokenFileMagic,
             ") so it is read as raw uint16 tokens, but its length ", size,
             " bytes is odd; the file is truncated or not a token file");
    std::vector<std::uint16_t> tokens(size / 2);
    f.read_at(tokens.data(), size, 0);
    return tokens;
  }

  const std::uint64_t header_bytes = kTokenFileHeaderInts * sizeof(std::int32_t);
  TZ_CHECK(size >= header_bytes, "token file '", path, "' starts with the llm.c magic but is only ", size,
           " bytes, shorter than the ", header_bytes, "-byte header; the file is truncated");
  std::vector<std::int32_t> header(kTokenFileHeaderInts);
  f.read_at(header.data(), header_bytes, 0);
  TZ_CHECK(header[1] == kTokenFileVersion, "token file '", path, "' has llm.c version ", header[1],
           " but tierzero reads version ", kTokenFileVersion,
           " (uint16 GPT-2 tokens; version 2 holds uint32 LLaMA-3 tokens); re-tokenise the data for GPT-2");
  TZ_CHECK(header[2] >= 0, "token file '", path, "' declares a negative token count ", header[2]);
  const std::uint64_t count = std::uint64_t(header[2]);
  TZ_CHECK(size == header_bytes + 2 * count, "token file '", path, "' declares ", count, " tokens (",
           header_bytes + 2 * count, " bytes with the header) but is ", size,
           " bytes; the file is truncated or was written incompletely");
  std::vector<std::uint16_t> tokens(count);
  f.read_at(tokens.data(), 2 * count, header_bytes);
  return tokens;
}

void write_token_file(const std::string& path, const std::vector<std::uint16_t>& tokens) {
  TZ_CHECK(tokens.size() <= std::size_t(std::numeric_limits<std::int32_t>::max()), "token file '", path,
           "': ", tokens.size(), " tokens do not fit llm.c's int32 count; split the data into shards");
  std::vector<std::int32_t> header(kTokenFileHeaderInts, 0);
  header[0] = kTokenFileMagic;
  header[1] = kTokenFileVersion;
  header[2] = std::int32_t(tokens.size());
  AtomicOutputFile out(path, "token file");
  out.write(header.data(), header.size() * sizeof(std::int32_t));
  out.write(tokens.data(), tokens.size() * sizeof(std::uint16_t));
  out.commit();
}

}  // namespace tz
