// The per-op table and its metrics record (see op_profile_report.h).
#include "train/op_profile_report.h"

#include <algorithm>
#include <cstdio>

namespace tz {

ProfileWindow profile_window(int n, int start, int end) {
  ProfileWindow w;
  if (n <= 0 || end <= start) return w;
  if (end - start == 1) {
    w.first = w.last = end;
    w.note = "the run has one step: it includes the one-time set-up a later step would not";
    return w;
  }
  w.first = start + 2;
  w.last = std::min(end, start + 1 + n);
  if (w.last - w.first + 1 < n)
    w.note = std::to_string(n) + " steps asked after the warm-up step, " + std::to_string(w.last - w.first + 1) +
             " in the run";
  return w;
}

namespace {

struct Line {
  std::string name;
  double calls = 0, ms = 0, tflops = 0, gbs = 0, peak_share = -1;  // per step; peak_share < 0: unknown
};

std::string fixed(double v, int digits) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

std::vector<Line> lines(const ProfileReport& r) {
  const double steps = r.steps();
  std::vector<Line> v;
  for (const OpRow& op : r.ops) {
    Line l{op.name, op.calls / steps, op.ms / steps};
    const double s = op.ms / 1000.0;
    if (s > 0 && op.flops > 0) {
      l.tflops = op.flops / s / 1e12;
      if (r.peaks.tflops > 0) l.peak_share = l.tflops / r.peaks.tflops;
    } else if (s > 0) {
      l.gbs = op.bytes / s / 1e9;
      if (r.peaks.memory_gbs > 0) l.peak_share = l.gbs / r.peaks.memory_gbs;
    }
    v.push_back(l);
  }
  for (int c = 0; c < kNumCollectives; ++c) {
    if (r.comm.calls[c] == 0) continue;
    Line l{collective_name(Collective(c)) + " (comm)", r.comm.calls[c] / steps, 1000.0 * r.comm.busy_seconds[c] / steps};
    if (r.comm.busy_seconds[c] > 0) l.gbs = r.comm.bytes_sent[c] / r.comm.busy_seconds[c] / 1e9;
    if (r.peaks.comm_gbs > 0 && l.gbs > 0) l.peak_share = l.gbs / r.peaks.comm_gbs;
    v.push_back(l);
  }
  std::stable_sort(v.begin(), v.end(), [](const Line& a, const Line& b) { return a.ms > b.ms; });
  return v;
}

}  // namespace

std::string ProfileReport::table() const {
  char b[256];
  std::string t = "op profile: steps " + std::to_string(window.first) + "-" + std::to_string(window.last) + " (" +
                  std::to_string(steps()) + (steps() == 1 ? " step" : " steps") + "), ops timed by " + clock;
  if (!window.note.empty()) t += " (" + window.note + ")";
  t += "\npeaks: " + (peaks.source.empty() ? std::string("unknown (give --profile-hardware)") : peaks.source) + "\n";
  std::snprintf(b, sizeof b, "%-28s %9s %10s %7s %9s %9s %7s\n", "op", "calls", "ms/step", "% step", "TFLOP/s",
                "GB/s", "% peak");
  t += b;
  auto phase = [&](const char* name, double ms) {
    std::snprintf(b, sizeof b, "%-28s %9s %10.3f %6.1f%%\n", name, "", ms, step_ms > 0 ? 100 * ms / step_ms : 0.0);
    t += b;
  };
  phase("step (host, to the readback)", step_ms);
  phase("forward", forward_ms);
  phase("backward", backward_ms);
  phase("optimizer", optimizer_ms);
  for (const Line& l : lines(*this)) {
    std::snprintf(b, sizeof b, "%-28s %9.1f %10.3f %6.1f%% %9s %9s %7s\n", l.name.c_str(), l.calls, l.ms,
                  step_ms > 0 ? 100 * l.ms / step_ms : 0.0, l.tflops > 0 ? fixed(l.tflops, 2).c_str() : "-",
                  l.gbs > 0 ? fixed(l.gbs, 1).c_str() : "-",
                  l.peak_share >= 0 ? (fixed(100 * l.peak_share, 1) + "%").c_str() : "-");
    t += b;
  }
  t += "(ops on other streams, copies and collectives, overlap the compute stream's: shares may sum past 100%)";
  return t;
}

nlohmann::json ProfileReport::record() const {
  nlohmann::json ops = nlohmann::json::array();
  for (const Line& l : lines(*this)) {
    nlohmann::json o = {{"op", l.name}, {"calls_per_step", l.calls}, {"ms_per_step", l.ms},
                        {"share_of_step", step_ms > 0 ? l.ms / step_ms : 0.0}};
    if (l.tflops > 0) o["tflops"] = l.tflops;
    if (l.gbs > 0) o["gbs"] = l.gbs;
    if (l.peak_share >= 0) o["share_of_peak"] = l.peak_share;
    ops.push_back(o);
  }
  nlohmann::json p = {{"first_step", window.first},
                      {"last_step", window.last},
                      {"clock", clock},
                      {"ms_per_step",
                       {{"step", step_ms}, {"forward", forward_ms}, {"backward", backward_ms}, {"optimizer", optimizer_ms}}},
                      {"peaks", {{"tflops", peaks.tflops}, {"memory_gbs", peaks.memory_gbs}, {"comm_gbs", peaks.comm_gbs},
                                 {"source", peaks.source}}},
                      {"ops", ops}};
  if (!window.note.empty()) p["note"] = window.note;
  return {{"profile", p}};
}

}  // namespace tz
