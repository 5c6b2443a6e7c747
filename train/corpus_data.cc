// load_corpus: the built-in corpus (/usr/share/common-licenses, byte tokens) or token files.
#include "train/corpus_data.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "model/byte_tokenizer.h"
#include "model/corpus.h"
#include "model/token_file.h"

namespace tz {
namespace {

std::vector<std::uint32_t> default_corpus_tokens() {
  std::string text;
  for (const std::string& f : default_corpus_files()) {
    std::ifstream in(f, std::ios::binary);
    TZ_CHECK(in, "cannot read the default corpus file ", f);
    text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    text.push_back('\n');
  }
  return encode_bytes(text);
}

}  // namespace

namespace {

// Tokens a token file holds, as read_token_file reads it: llm.c's header count, else raw uint16; 0 unreadable.
std::uint64_t token_count(const std::string& path) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return 0;
  std::ifstream in(path, std::ios::binary);
  std::int32_t header[3] = {0, 0, 0};
  if (size >= sizeof header && in.read(reinterpret_cast<char*>(header), sizeof header) &&
      (header[0] == kTokenFileMagic || header[0] == kTokenFileMagic32))
    return header[2] > 0 ? std::uint64_t(header[2]) : 0;
  return size / 2;
}

}  // namespace

std::size_t data_loader_bytes(const TrainOptions& opt, int world) {
  const std::uint64_t global = std::uint64_t(std::max(world, 1)) * std::uint64_t(std::max(opt.micro_batch, 1)) *
                               std::uint64_t(std::max(opt.seq_len, 1));
  auto windows = [&](std::uint64_t tokens) { return tokens > 0 ? (tokens - 1) / global : 0; };
  std::uint64_t held = 0, train = 0, val = 0;
  if (opt.data == kDefaultData) {
    std::uint64_t all = 0;
    for (const std::string& f : default_corpus_files()) {
      std::error_code ec;
      const std::uintmax_t n = std::filesystem::file_size(f, ec);
      all += ec ? 0 : n + 1;  // a byte token per byte, and a newline after each file
    }
    held = all;  // the training tokens keep the whole corpus's capacity
    train = all - all / 10;
    if (opt.val_data.empty()) val = all / 10;
  } else {
    held = train = token_count(opt.data);
  }
  if (!opt.val_data.empty()) val = token_count(opt.val_data);
  return std::size_t(4 * (held + val) + 8 * (windows(train) + windows(val)));
}

CorpusData load_corpus(const TrainOptions& opt) {
  CorpusData c;
  if (opt.data == kDefaultData) {
    // Split in place, so that the tokens are held once (the memory plan's "data loader" line).
    c.train = default_corpus_tokens();
    const std::size_t n_val = c.train.size() / 10;  // the last 10% validates
    if (opt.val_data.empty()) {
      c.val.assign(c.train.end() - std::ptrdiff_t(n_val), c.train.end());
      c.val_name = "default corpus (/usr/share/common-licenses), last 10%";
    }
    c.train.resize(c.train.size() - n_val);  // keeps its capacity: a shrink would copy it
    c.train_name = "default corpus (/usr/share/common-licenses), first 90%";
  } else {
    c.train = read_token_file(opt.data);
    c.train_name = opt.data;
  }
  if (!opt.val_data.empty()) {
    c.val = read_token_file(opt.val_data);
    c.val_name = opt.val_data;
  }
  return c;
}

}  // namespace tz
