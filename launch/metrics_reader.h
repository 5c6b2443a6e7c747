// Reads a --metrics file for `tierzero report`: a file that may still be being written, or that a kill
// cut off mid-line. Only whole lines count (a last line without its newline is left out and said so);
// a line that is not a JSON object is counted and skipped. A resume record supersedes the records after
// its step written earlier (a run killed after its last checkpoint trained those steps again): for each
// step the record after the latest start or resume marker counts (docs/metrics.md, "One file per run").
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tz {

struct MetricsRun {
  nlohmann::json run;                           // the latest start or resume record ({} in a file without one)
  std::vector<nlohmann::json> steps;            // the training records that count, by step
  std::vector<std::pair<int, double>> val;      // (step, val_loss), by step
  int resumes = 0;                              // resume records read
  std::size_t unreadable = 0;                   // whole lines that are not JSON objects
  bool cut_last_line = false;                   // the file ends in a line without its newline
};

// Throws naming `path` when it cannot be read (missing, a folder, a device, a FIFO) or holds no
// training record.
MetricsRun read_metrics(const std::string& path);

}  // namespace tz
