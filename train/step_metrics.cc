// Builders of the per-step metrics record.
#include "train/step_metrics.h"

namespace tz {

nlohmann::json comm_record(const CommStats& now, const CommStats& before) {
  nlohmann::json j = nlohmann::json::object();
  for (int c = 0; c < kNumCollectives; ++c) {
    const int calls = now.calls[c] - before.calls[c];
    if (calls == 0) continue;
    j[collective_name(Collective(c))] = {{"elements_sent", now.elements_sent[c] - before.elements_sent[c]},
                                         {"bytes_sent", now.bytes_sent[c] - before.bytes_sent[c]},
                                         {"wait_ms", 1000.0 * (now.wait_seconds[c] - before.wait_seconds[c])},
                                         {"busy_ms", 1000.0 * (now.busy_seconds[c] - before.busy_seconds[c])},
                                         {"calls", calls}};
  }
  return j;
}

nlohmann::json comm_overlap_record(const CommStats& now, const CommStats& before) {
  double wait = 0, busy = 0;
  for (int c = 0; c < kNumCollectives; ++c) {
    const int calls = now.calls[c] - before.calls[c];
    if (calls == 0) continue;
    wait += now.wait_seconds[c] - before.wait_seconds[c];
    busy += now.busy_seconds[c] - before.busy_seconds[c];
  }
  // The share of the collectives' time (call to completion) the host did not spend blocked on them.
  return {{"wait_ms", 1000.0 * wait},
          {"busy_ms", 1000.0 * busy},
          {"hidden_fraction", busy > 0 ? std::max(0.0, 1.0 - wait / busy) : 1.0}};
}

double comm_wait_ms(const CommStats& now, const CommStats& before) {
  double s = 0;
  for (int c = 0; c < kNumCollectives; ++c) s += now.wait_seconds[c] - before.wait_seconds[c];
  return 1000.0 * s;
}

namespace {

nlohmann::json io_record(SwapStats& sw, double phase_ms) {
  const double secs = phase_ms / 1000.0;
  nlohmann::json j = {{"read_bytes", sw.read_bytes},
                      {"write_bytes", sw.write_bytes},
                      {"gbps", secs > 0 ? (sw.read_bytes + sw.write_bytes) / secs / 1e9 : 0.0},
                      {"wait_ms", 1000.0 * sw.wait_seconds},
                      {"hidden_fraction", phase_ms > 0 ? 1.0 - 1000.0 * sw.wait_seconds / phase_ms : 0.0}};
  sw.reset();
  return j;
}

}  // namespace

nlohmann::json offload_record(Engine& engine, const StepTimes& t) {
  nlohmann::json j = nlohmann::json::object();
  // The optimizer's traffic over the optimizer phase: how much of it Adam spent blocked on I/O.
  if (SwapStats* sw = engine.optimizer_io_stats()) j["nvme"] = io_record(*sw, t.optimizer);
  if (SwapStats* pw = engine.param_io_stats()) j["nvme_params"] = io_record(*pw, t.step);
  return j;
}

CommStats comm_difference(const CommStats& now, const CommStats& before) {
  CommStats d;
  for (int c = 0; c < kNumCollectives; ++c) {
    d.calls[c] = now.calls[c] - before.calls[c];
    d.bytes_sent[c] = now.bytes_sent[c] - before.bytes_sent[c];
    d.elements_sent[c] = now.elements_sent[c] - before.elements_sent[c];
    d.busy_seconds[c] = now.busy_seconds[c] - before.busy_seconds[c];
    d.wait_seconds[c] = now.wait_seconds[c] - before.wait_seconds[c];
  }
  return d;
}

void comm_add(CommStats& into, const CommStats& d) {
  for (int c = 0; c < kNumCollectives; ++c) {
    into.calls[c] += d.calls[c];
    into.bytes_sent[c] += d.bytes_sent[c];
    into.elements_sent[c] += d.elements_sent[c];
    into.busy_seconds[c] += d.busy_seconds[c];
    into.wait_seconds[c] += d.wait_seconds[c];
  }
}

}  // namespace tz
