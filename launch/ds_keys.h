// The DeepSpeed keys of each object of a DeepSpeed config, and how tierzero treats each one: read,
// accepted with no effect (with the reason, printed), or refused (with what to do instead).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "zero/lr_schedule.h"

namespace tz {

// The JSON type a no-effect key's value must have (it is checked all the same: a typo in a value is
// still an error).
enum class ValueKind { boolean, count, number, object };

// A DeepSpeed key that changes nothing tierzero computes, whatever its value: it tunes how DeepSpeed
// schedules or lays out its work, or serves a DeepSpeed feature tierzero does otherwise. Accepted, with one
// printed line giving `why`.
struct NoEffectKey {
  const char* name;
  ValueKind kind;
  const char* why;
};

// A DeepSpeed key tierzero does not implement. `accepted` (JSON text), when set, is the one value whose
// DeepSpeed meaning is what tierzero always does (usually DeepSpeed's default); it is accepted silently.
struct RefusedKey {
  const char* name;
  const char* note = "";
  const char* accepted = nullptr;
};

// A key tierzero reads (launch/ds_config.cc, launch/ds_scheduler.cc): the flag that overrides it, if any,
// and what it sets. `tierzero help --markdown` prints these tables (docs/configuration.md).
struct ReadKey {
  const char* name;
  const char* flag;  // "--zero-stage", or "" when no flag sets it
  const char* does;
};

// The keys of one JSON object.
struct KeyLevel {
  std::vector<ReadKey> read;
  std::vector<NoEffectKey> no_effect;
  std::vector<RefusedKey> refused;

  bool reads(const std::string& key) const;
  const NoEffectKey* find_no_effect(const std::string& key) const;
  const RefusedKey* find_refused(const std::string& key) const;
  bool knows(const std::string& key) const;
  // The known key nearest to `key` by edit distance, ignoring case; ties go to the keys read, then to
  // the no-effect ones, then to the refused ones, each in the order listed.
  std::string nearest(const std::string& key) const;
};

const KeyLevel& top_level_keys();
const KeyLevel& zero_keys();
const KeyLevel& offload_optimizer_keys();
const KeyLevel& offload_param_keys();
const KeyLevel& aio_keys();
const KeyLevel& fp16_keys();
const KeyLevel& bf16_keys();
const KeyLevel& optimizer_keys();
const KeyLevel& adam_params_keys();
const KeyLevel& scheduler_keys();
// The constructor parameters of DeepSpeed's scheduler class for `s` (a DeepSpeed schedule).
const KeyLevel& scheduler_params_keys(LrSchedule s);

// DeepSpeed's optimizer names (lower case, as DeepSpeed compares them) that tierzero does not implement.
const std::set<std::string>& deepspeed_optimizer_names();
// DeepSpeed's own scheduler names that tierzero does not implement (LRRangeTest, OneCycle).
const std::set<std::string>& unimplemented_deepspeed_schedulers();

}  // namespace tz
