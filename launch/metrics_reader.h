// Reads a --metrics file for `tierzero report`: a file that may still be being written, or that a kill
// cut off mid-line. Only whole lines count (a last line without its newline is left out and said so);
// a line that is not a JSON object is counted and skipped. A resume record supersedes the records after
// its step written earlier (a run killed after its last checkpoint trained those steps again): for each
// step the record after the latest start or resume marker counts (docs/metrics.md, "One file per run").
// The file is read a piece at a time and each record is kept only as the figures the report draws, so a
// run of a million steps is read in memory proportional to its steps, not to its records' text.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tz {

// One training record's figures (NaN where the record has none).
struct StepRow {
  int step = 0;
  double tokens, loss, tokens_per_s, step_ms, data_ms, forward_ms, backward_ms, optimizer_ms, hidden_fraction;
  double device_bytes, host_bytes, nvme_bytes, nvme_gbps, nvme_params_gbps, slowest_rank, straggler_rank;
  std::vector<double> rank_host_bytes;  // ranks.bytes.host, the first 8 ranks
};

struct MetricsRun {
  nlohmann::json run;                       // the latest start or resume record ({} in a file without one)
  std::vector<StepRow> steps;               // the training records that count, by step
  std::vector<std::pair<int, double>> val;  // (step, val_loss), by step
  int resumes = 0;                          // resume records read
  std::size_t unreadable = 0;               // whole lines that are not JSON objects
  bool cut_last_line = false;               // the file ends in a line without its newline
};

// The number at a dotted path of a record ("ms.forward"), NaN when absent or not a number.
double metrics_number(const nlohmann::json& record, const char* path);

// The figures of one training record.
StepRow step_row(const nlohmann::json& record);

// Throws naming `path` when it cannot be read (missing, a folder, a device, a FIFO) or holds no
// training record.
MetricsRun read_metrics(const std::string& path);

}  // namespace tz
