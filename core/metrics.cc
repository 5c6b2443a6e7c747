// MetricsWriter: JSONL append with a flush per record.
#include "core/metrics.h"

#include <utility>

#include "core/error.h"

namespace tz {

MetricsWriter::MetricsWriter(const std::string& path) : path_(path) {
  if (path.empty()) return;
  file_ = std::fopen(path.c_str(), "w");
  TZ_CHECK(file_ != nullptr, "cannot open the metrics file '", path, "' for writing: ", std::strerror(errno));
}

MetricsWriter::~MetricsWriter() {
  if (file_) std::fclose(file_);
}

MetricsWriter::MetricsWriter(MetricsWriter&& o) noexcept
    : file_(std::exchange(o.file_, nullptr)), path_(std::move(o.path_)) {}

MetricsWriter& MetricsWriter::operator=(MetricsWriter&& o) noexcept {
  if (this != &o) {
    if (file_) std::fclose(file_);
    file_ = std::exchange(o.file_, nullptr);
    path_ = std::move(o.path_);
  }
  return *this;
}

void MetricsWriter::write(const nlohmann::json& record) {
  if (!file_) return;
  std::string line = record.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0)
    TZ_FAIL("writing the metrics file '", path_, "' failed: ", std::strerror(errno), " (is the disk full?)");
}

}  // namespace tz
