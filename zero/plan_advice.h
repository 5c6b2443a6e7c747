// What to change when a memory plan does not fit its budgets: the smallest single changes of the
// settings (smaller buckets or micro-batch, activation checkpointing, a higher stage, offloading
// optimizer states or parameters, more ranks), each re-planned with the same pure function train
// allocates from, so every suggestion shown is known to fit, with its memory per tier.
#pragma once

#include <string>
#include <vector>

#include "zero/hardware.h"
#include "zero/memory_plan.h"

namespace tz {

struct PlanChange {
  std::string flags;  // what to give on the command line, e.g. "--reduce-bucket-size 5e7"
  int cost = 0;       // rank of the change's price: 0 none (sizes), higher costs time or ranks
  PerTier<std::size_t> total;  // the changed plan's bytes per tier on this rank
  double step_s = 0;                 // its predicted step time, when advise() was given hardware
  PlanInputs inputs;                 // the changed settings
};

// Changes that make `in` fit, cheapest first (at most `limit`); pairs of changes when no single one
// does. Empty when nothing tried fits.
// With `hw`, each change also gets its predicted step time (zero/step_time.h).
std::vector<PlanChange> advise(const PlanInputs& in, std::size_t limit = 6, const Hardware* hw = nullptr,
                               int grad_accum = 1);

// "smallest changes that fit ..." lines for a plan that does not fit, or what to raise.
std::string advice_text(const MemoryPlan& plan, const Hardware* hw = nullptr, int grad_accum = 1);

// Throws the plan's fit problem with the advice appended (what train and plan print when refusing).
void check_fits_with_advice(const MemoryPlan& plan);

// An element count the way DeepSpeed configs write it: 50000000 -> "5e7", 123 -> "123".
std::string count_text(std::size_t n);

}  // namespace tz
