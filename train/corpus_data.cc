// load_corpus: the built-in corpus (/usr/share/common-licenses, byte tokens) or token files.
#include "train/corpus_data.h"

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

CorpusData load_corpus(const TrainOptions& opt) {
  CorpusData c;
  if (opt.data == kDefaultData) {
    std::vector<std::uint32_t> all = default_corpus_tokens();
    std::size_t n_val = all.size() / 10;  // the last 10% validates
    c.train.assign(all.begin(), all.end() - std::ptrdiff_t(n_val));
    c.train_name = "default corpus (/usr/share/common-licenses), first 90%";
    if (opt.val_data.empty()) {
      c.val.assign(all.end() - std::ptrdiff_t(n_val), all.end());
      c.val_name = "default corpus (/usr/share/common-licenses), last 10%";
    }
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
