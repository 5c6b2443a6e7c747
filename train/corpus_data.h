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

}  // namespace tz
