// read_metrics: whole lines of the file as it is when opened, in order, markers applied, 4 MiB at a time.
#include "launch/metrics_reader.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "core/error.h"
#include "model/file_io.h"

namespace tz {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

double metrics_number(const nlohmann::json& j, const char* path) {
  const nlohmann::json* at = &j;
  for (const char* b = path;;) {
    const char* e = b;
    while (*e && *e != '.') ++e;
    const std::string key(b, e);
    if (!at->is_object()) return kNaN;
    auto it = at->find(key);
    if (it == at->end()) return kNaN;
    at = &*it;
    if (!*e) break;
    b = e + 1;
  }
  return at->is_number() ? at->get<double>() : kNaN;
}

StepRow step_row(const nlohmann::json& j) {
  StepRow r;
  r.step = j["step"].get<int>();
  r.tokens = metrics_number(j, "tokens"), r.loss = metrics_number(j, "loss"), r.tokens_per_s = metrics_number(j, "tokens_per_s"), r.step_ms = metrics_number(j, "ms.step");
  r.data_ms = metrics_number(j, "ms.data"), r.forward_ms = metrics_number(j, "ms.forward"), r.backward_ms = metrics_number(j, "ms.backward");
  r.optimizer_ms = metrics_number(j, "ms.optimizer"), r.hidden_fraction = metrics_number(j, "comm_overlap.hidden_fraction");
  r.device_bytes = metrics_number(j, "bytes.device"), r.host_bytes = metrics_number(j, "bytes.host"), r.nvme_bytes = metrics_number(j, "bytes.nvme");
  r.nvme_gbps = metrics_number(j, "offload.nvme.gbps"), r.nvme_params_gbps = metrics_number(j, "offload.nvme_params.gbps");
  r.slowest_rank = metrics_number(j, "ranks.ms.step.slowest_rank");
  r.straggler_rank = j.contains("straggler") && j["straggler"].is_object() ? metrics_number(j, "straggler.rank") : kNaN;
  auto ranks = j.find("ranks");
  if (ranks != j.end() && ranks->is_object() && ranks->contains("bytes") && (*ranks)["bytes"].contains("host") &&
      (*ranks)["bytes"]["host"].is_array())
    for (const nlohmann::json& b : (*ranks)["bytes"]["host"])
      if (r.rank_host_bytes.size() < 8) r.rank_host_bytes.push_back(b.is_number() ? b.get<double>() : kNaN);
  return r;
}

MetricsRun read_metrics(const std::string& path) {
  const InputFile f(path, "metrics file");  // refuses a folder, a device or a FIFO before any read
  const std::uint64_t size = f.size();      // what is there now: a writer may append more
  MetricsRun r;
  std::map<int, StepRow> steps;
  std::map<int, double> val;
  std::size_t lines = 0;
  auto line_read = [&](const std::string& line) {
    if (line.empty()) return;
    ++lines;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) {
      ++r.unreadable;
      return;
    }
    const auto event = j.find("event");
    const auto step = j.find("step");
    if (event != j.end() && (*event == "start" || *event == "resume")) {
      const int from = step != j.end() && step->is_number_integer() ? step->get<int>() : 0;
      steps.erase(steps.upper_bound(from), steps.end());
      val.erase(val.upper_bound(from), val.end());
      r.resumes += *event == "resume";
      r.run = std::move(j);
    } else if (step == j.end() || !step->is_number_integer()) {
      return;  // an end record, a profile
    } else if (j.contains("val_loss") && j["val_loss"].is_number()) {
      val[step->get<int>()] = j["val_loss"].get<double>();
    } else if (j.contains("loss")) {
      steps[step->get<int>()] = step_row(j);
    }
  };
  std::string chunk(std::size_t(4) << 20, '\0'), pending;
  for (std::uint64_t at = 0; at < size;) {
    const std::size_t n = std::size_t(std::min<std::uint64_t>(chunk.size(), size - at));
    f.read_at(chunk.data(), n, at);
    at += n;
    for (std::size_t b = 0; b < n;) {
      const char* nl = static_cast<const char*>(std::memchr(chunk.data() + b, '\n', n - b));
      if (!nl) {
        pending.append(chunk, b, n - b);
        break;
      }
      const std::size_t e = std::size_t(nl - chunk.data());
      pending.append(chunk, b, e - b);
      line_read(pending);
      pending.clear();
      b = e + 1;
    }
  }
  r.cut_last_line = !pending.empty();  // a record being written, or one a kill cut off
  TZ_CHECK(lines > 0, "metrics file ", path, r.cut_last_line ? " holds no whole line yet" : " is empty",
           ": give the --metrics file of a run that has made a step");
  TZ_CHECK(r.unreadable < lines, "metrics file ", path, " holds no JSON records (", lines,
           " lines, none a JSON object): is it the file --metrics wrote?");
  TZ_CHECK(!steps.empty(), "metrics file ", path, " holds no training record (", lines,
           " lines read): the run has not finished a step yet, or the file is not a --metrics file");
  r.steps.reserve(steps.size());
  for (auto& [s, row] : steps) r.steps.push_back(std::move(row));
  r.val.assign(val.begin(), val.end());
  return r;
}

}  // namespace tz
