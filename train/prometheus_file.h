// --prometheus-textfile: the latest step's figures in Prometheus' text format, for node_exporter's
// textfile collector (which reads *.prom files in its folder), rewritten every --prometheus-every steps
// and after the last one, atomically (a temporary file beside it, renamed: the collector never reads half
// a file). Names and units follow Prometheus' conventions: base units (seconds, bytes), a counter's name
// ends in _total; every sample carries the run's run_id label (docs/metrics.md#prometheus).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "train/rank_stats.h"

namespace tz {

// The text for one training record (train/train_loop.cc's) and every rank's figures of the same step;
// `plan_peak_bytes`: {device, host, nvme}, the plan's per-rank totals.
std::string prometheus_text(const nlohmann::json& record, const RankStats& ranks, const std::string& run_id,
                            const nlohmann::json& plan_peak_bytes);

// Writes `text` to `path` through the one output writer (model/file_io.h), which refuses what an output
// may not replace; throws naming the file.
void write_prometheus_textfile(const std::string& path, const std::string& text);

}  // namespace tz
