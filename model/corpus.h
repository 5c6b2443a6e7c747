// Text corpora for byte-level training: the default English corpus every Debian machine has (the
// license texts under /usr/share/common-licenses) and turning text files into train/val token files.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tz {

inline constexpr const char* kDefaultCorpusDir = "/usr/share/common-licenses";

// The regular files (symlinks skipped, so GPL -> GPL-3 is not read twice) directly under
// kDefaultCorpusDir, sorted by name. Throws naming the base-files package when the folder is missing or
// empty.
std::vector<std::string> default_corpus_files();

struct PreparedCorpus {
  std::size_t train_tokens = 0, val_tokens = 0;
};

// Concatenates the inputs in the order given, each followed by one '\n' (even if it already ends
// in one: simple, and documents stay separated), byte-tokenises the text, and writes token files with
// write_token_file. When val_out is non-empty the LAST floor(total * val_fraction) tokens go to
// val_out (val_fraction in (0, 1), and both parts must be non-empty); otherwise everything goes to
// train_out and val_fraction is ignored.
PreparedCorpus prepare_byte_corpus(const std::vector<std::string>& inputs, const std::string& train_out,
                                   const std::string& val_out, double val_fraction);

}  // namespace tz
