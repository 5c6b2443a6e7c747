// Finding the default corpus and preparing byte-level token files from text.
#include "model/corpus.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "core/error.h"
#include "core/progress.h"
#include "model/byte_tokenizer.h"
#include "model/file_io.h"
#include "model/token_file.h"

namespace tz {

namespace fs = std::filesystem;

std::vector<std::string> default_corpus_files() {
  const fs::path dir = kDefaultCorpusDir;
  std::error_code ec;
  TZ_CHECK(
      fs::is_directory(dir, ec), "the default corpus folder ", dir.string(),
      " is missing; it comes with Debian's base-files package (apt-get install base-files), or give your "
      "own text files");
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    // symlink_status: a link to another license would read the same text twice.
    if (fs::is_regular_file(entry.symlink_status())) files.push_back(entry.path().string());
  }
  TZ_CHECK(!ec, "cannot list the default corpus folder ", dir.string(), ": ", ec.message());
  TZ_CHECK(!files.empty(), "the default corpus folder ", dir.string(),
           " holds no regular files; it comes with Debian's base-files package (apt-get install --reinstall "
           "base-files), or give your own text files");
  std::sort(files.begin(), files.end());
  return files;
}

PreparedCorpus prepare_byte_corpus(const std::vector<std::string>& inputs, const std::string& train_out,
                                   const std::string& val_out, double val_fraction) {
  TZ_CHECK(!inputs.empty(), "preparing a byte corpus for '", train_out, "': no input files given");
  TZ_CHECK(!train_out.empty(), "preparing a byte corpus: no output path for the training tokens");
  if (!val_out.empty())
    TZ_CHECK(val_fraction > 0.0 && val_fraction < 1.0,
             "preparing a byte corpus: the validation fraction must be in "
             "(0, 1) when a validation file ('",
             val_out, "') is asked for, got ", val_fraction);

  // The total is for the progress line only: InputFile checks each file when it opens it.
  std::uint64_t total = 0;
  for (const auto& path : inputs) {
    std::error_code ec;
    const std::uintmax_t size = fs::is_regular_file(path, ec) ? fs::file_size(path, ec) : 0;
    total += ec ? 0 : size;
  }
  Progress progress("reading " + std::to_string(inputs.size()) + " text file" + (inputs.size() == 1 ? "" : "s"), total);
  std::string text;
  constexpr std::uint64_t kChunk = std::uint64_t(64) << 20;
  for (const auto& path : inputs) {
    InputFile f(path, "corpus file");
    const std::size_t at = text.size();
    text.resize(at + f.size());
    for (std::uint64_t off = 0; off < f.size(); off += kChunk) {
      const std::size_t n = std::size_t(std::min(kChunk, f.size() - off));
      f.read_at(text.data() + at + off, n, off);
      progress.advance(n);
    }
    text.push_back('\n');
  }
  std::vector<std::uint32_t> tokens = encode_bytes(text);

  PreparedCorpus out;
  if (val_out.empty()) {
    out.train_tokens = tokens.size();
    write_token_file(train_out, tokens);
    return out;
  }
  out.val_tokens = static_cast<std::size_t>(double(tokens.size()) * val_fraction);
  out.train_tokens = tokens.size() - out.val_tokens;
  TZ_CHECK(out.val_tokens > 0 && out.train_tokens > 0, "preparing a byte corpus: ", tokens.size(),
           " tokens split at validation fraction ", val_fraction, " leave ", out.train_tokens,
           " for training and ", out.val_tokens,
           " for validation; both need some: use more text or another fraction");
  const auto split = tokens.begin() + std::ptrdiff_t(out.train_tokens);
  write_token_file(train_out, std::vector<std::uint32_t>(tokens.begin(), split));
  write_token_file(val_out, std::vector<std::uint32_t>(split, tokens.end()));
  return out;
}

}  // namespace tz
