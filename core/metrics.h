// Per-step metrics: one JSON object per line appended to a JSONL file (step, loss, lr, tokens/s,
// ms per phase, bytes and peak per tier), for scripts and plots.
#pragma once

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace tz {

class MetricsWriter {
 public:
  MetricsWriter() = default;
  // Opens (truncates) path; an empty path writes nothing.
  explicit MetricsWriter(const std::string& path);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;
  MetricsWriter(MetricsWriter&& o) noexcept;
  MetricsWriter& operator=(MetricsWriter&& o) noexcept;

  bool enabled() const { return file_ != nullptr; }
  // Writes one line and flushes, so a crash loses at most the current step.
  void write(const nlohmann::json& record);

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
};

}  // namespace tz
