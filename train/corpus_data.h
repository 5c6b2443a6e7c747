// The token streams a run trains and validates on: a token file, or the built-in corpus split 90/10.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/train_options.h"

namespace tz {

struct CorpusData {
  std::vector<std::uint32_t> train, val;
  std::string train_name, val_name;
};

CorpusData load_corpus(const TrainOptions& opt);

// Bytes the run's data loaders hold on each of `world` ranks (the memory plan's "data loader" line): 4 per
// token read (the built-in corpus's training part keeps the capacity of the whole) and 8 per window of an
// epoch's order, from the files' sizes and headers without reading their tokens; a file that cannot be
// read counts nothing (a plan for another machine; train refuses it when it loads).
std::size_t data_loader_bytes(const TrainOptions& opt, int world);

}  // namespace tz
