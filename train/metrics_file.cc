// MetricsFile: JSONL records through an AtomicOutputFile, committed at the end of the run.
#include "train/metrics_file.h"

#include "core/error.h"
#include "model/file_io.h"

namespace tz {

MetricsFile::MetricsFile(const std::string& path) : path_(path) {
  if (!path.empty()) out_ = std::make_unique<AtomicOutputFile>(path, "metrics file");
}

MetricsFile::~MetricsFile() {
  if (!out_) return;
  try {
    commit();
  } catch (const std::exception& e) {
    log_line(std::string("the metrics were not kept: ") + e.what());
  }
}

void MetricsFile::write(const nlohmann::json& record) {
  if (!out_) return;
  const std::string line = record.dump() + "\n";
  out_->write(line.data(), line.size());
}

void MetricsFile::commit() {
  if (!out_) return;
  auto out = std::move(out_);
  out->commit();
}

}  // namespace tz
