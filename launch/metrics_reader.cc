// read_metrics: whole lines of the file as it is when opened, in order, markers applied.
#include "launch/metrics_reader.h"

#include <algorithm>
#include <map>

#include "core/error.h"
#include "model/file_io.h"

namespace tz {

MetricsRun read_metrics(const std::string& path) {
  const InputFile f(path, "metrics file");  // refuses a folder, a device or a FIFO before any read
  std::string text(f.size(), '\0');
  if (!text.empty()) f.read_at(text.data(), text.size(), 0);  // what is there now: a writer may append more
  MetricsRun r;
  std::map<int, nlohmann::json> steps;
  std::map<int, double> val;
  std::size_t lines = 0;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = text.find('\n', at);
    if (end == std::string::npos) {
      r.cut_last_line = true;  // a record being written, or one a kill cut off
      break;
    }
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    if (line.empty()) continue;
    ++lines;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) {
      ++r.unreadable;
      continue;
    }
    const std::string event = j.value("event", "");
    if (event == "start" || event == "resume") {
      const int from = j.value("step", 0);
      steps.erase(steps.upper_bound(from), steps.end());
      val.erase(val.upper_bound(from), val.end());
      r.resumes += event == "resume";
      r.run = std::move(j);
    } else if (j.contains("val_loss") && j["val_loss"].is_number() && j["step"].is_number_integer()) {
      val[j["step"].get<int>()] = j["val_loss"].get<double>();
    } else if (j.contains("loss") && j["step"].is_number_integer()) {
      const int s = j["step"].get<int>();
      steps[s] = std::move(j);
    }
  }
  TZ_CHECK(lines > 0, "metrics file ", path, " is empty: give the --metrics file of a run that has made a step");
  TZ_CHECK(r.unreadable < lines, "metrics file ", path, " holds no JSON records (", lines,
           " lines, none a JSON object): is it the file --metrics wrote?");
  TZ_CHECK(!steps.empty(), "metrics file ", path, " holds no training record (", lines,
           " lines read): the run has not finished a step yet, or the file is not a --metrics file");
  for (auto& [s, j] : steps) r.steps.push_back(std::move(j));
  r.val.assign(val.begin(), val.end());
  return r;
}

}  // namespace tz
