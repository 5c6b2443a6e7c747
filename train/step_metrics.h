// The per-step JSONL record: loss and schedule, time per phase, each collective kind's traffic and
// how much of its time was hidden behind compute, the NVMe traffic, and the bytes per tier.
#pragma once

#include <nlohmann/json.hpp>

#include "comm/communicator.h"
#include "zero/engine.h"

namespace tz {

struct StepTimes {
  double data = 0, forward = 0, backward = 0, optimizer = 0, step = 0;  // ms
};

// Collective traffic between two snapshots, per kind: {elements_sent, bytes_sent, wait_ms, busy_ms, calls}.
nlohmann::json comm_record(const CommStats& now, const CommStats& before);
// Over all kinds: the time blocked in waits, the collectives' time from call to completion, and the
// fraction of it hidden behind compute, 1 - wait / busy.
nlohmann::json comm_overlap_record(const CommStats& now, const CommStats& before);
double comm_wait_ms(const CommStats& now, const CommStats& before);
// Every counter of `now` less `before`, per kind: the collectives between two snapshots.
CommStats comm_difference(const CommStats& now, const CommStats& before);
// Adds every counter of `d` to `into`, per kind.
void comm_add(CommStats& into, const CommStats& d);

// The NVMe traffic since the last call (resets the engine's counters): the optimizer swap over the
// optimizer phase, the parameter shards over the whole step.
nlohmann::json offload_record(Engine& engine, const StepTimes& t);

}  // namespace tz
