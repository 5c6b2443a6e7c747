// Typed, checked reads of a DeepSpeed config's values, and the key check of each object (ds_reader.h).
#include "launch/ds_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "core/error.h"

namespace tz {
namespace {

using json = nlohmann::json;

const char* const kDocs = "docs/configuration.md, section \"DeepSpeed config keys\"";

}  // namespace

const char* json_kind(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    case json::value_t::number_float:
      return "a number";
    default:
      return "an unsupported JSON value";
  }
}

std::string join_key(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string show_value(const json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::string show_number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

DsReader::DsReader(std::string source, FlagGiven flag_given)
    : src_(std::move(source)), given_(std::move(flag_given)) {}

const json* DsReader::find(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

void DsReader::check_keys(const json& obj, const std::string& path, const KeyLevel& level) {
  for (const auto& [key, value] : obj.items()) {
    if (level.reads(key)) continue;
    const std::string full = join_key(path, key);
    if (const NoEffectKey* k = level.find_no_effect(key)) {
      switch (k->kind) {
        case ValueKind::boolean:
          boolean(value, full);
          break;
        case ValueKind::count:
          count(value, full, 0);
          break;
        case ValueKind::number:
          real(value, full, "a number", [](double) { return true; });
          break;
        case ValueKind::object:
          object(value, full);
          break;
      }
      no_effect(full, k->why);
      continue;
    }
    if (const RefusedKey* un = level.find_refused(key)) {
      if (un->accepted && value == json::parse(un->accepted)) continue;
      std::ostringstream os;
      os << src_ << ": '" << full << "' is a DeepSpeed key that tierzero does not implement in this version";
      if (un->accepted)
        os << "; only " << un->accepted << " is accepted, and the file gives " << show_value(value);
      if (*un->note) os << " (" << un->note << ")";
      if (un->accepted)
        os << "; set it to " << un->accepted << " or remove it (see " << kDocs << ")";
      else
        os << "; remove it from the config (see " << kDocs << ")";
      TZ_FAIL(os.str());
    }
    TZ_FAIL("unknown key '", full, "' in ", src_, "; did you mean '", suggestion(key, path, level), "'?");
  }
}

// A section's key written at the top level (say "stage") is most likely misplaced: point into the
// section. Otherwise the nearest known key at the same level.
std::string DsReader::suggestion(const std::string& key, const std::string& path, const KeyLevel& level) {
  if (path.empty()) {
    const std::pair<const char*, const KeyLevel*> sections[] = {
        {"zero_optimization", &zero_keys()},
        {"optimizer.params", &adam_params_keys()},
        {"fp16", &fp16_keys()},
        {"scheduler.params", &scheduler_params_keys(LrSchedule::warmup_decay)},
        {"scheduler.params", &scheduler_params_keys(LrSchedule::warmup_cosine)}};
    for (const auto& [section, sub] : sections)
      if (sub->reads(key)) return join_key(section, key);
  }
  return join_key(path, level.nearest(key));
}

void DsReader::fail_value(const json& v, const std::string& path, const std::string& allowed) const {
  if (is_auto(v))
    TZ_FAIL(
        src_, ": ", path,
        " is \"auto\"; tierzero resolves \"auto\" only where the Hugging Face Trainer fills it in, or where "
        "DeepSpeed takes the key's default (see ",
        kDocs, "), and not here: replace it with ", allowed);
  if (v.is_number()) TZ_FAIL(src_, ": ", path, " is ", show_value(v), "; allowed: ", allowed);
  TZ_FAIL(src_, ": ", path, " is ", show_value(v), " (", json_kind(v), "); expected ", allowed);
}

bool DsReader::boolean(const json& v, const std::string& path) const {
  if (!v.is_boolean()) fail_value(v, path, "true or false");
  return v.get<bool>();
}

long long DsReader::integer(const json& v, const std::string& path, long long lo, long long hi,
                            const std::string& allowed) const {
  if (v.is_number_unsigned()) {
    auto u = v.get<std::uint64_t>();
    if ((lo > 0 && u < std::uint64_t(lo)) || u > std::uint64_t(hi)) fail_value(v, path, allowed);
    return (long long)u;  // <= hi, so it fits
  }
  if (v.is_number_integer()) {
    long long i = v.get<long long>();
    if (i < lo || i > hi) fail_value(v, path, allowed);
    return i;
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d) || std::floor(d) != d || d < double(lo) || d > double(hi))
      fail_value(v, path, allowed);
    return (long long)d;
  }
  fail_value(v, path, allowed);
}

std::size_t DsReader::count(const json& v, const std::string& path, std::size_t lo) const {
  std::string allowed = "a whole number of elements >= " + std::to_string(lo) + ", e.g. 500000000 or 5e8";
  return std::size_t(integer(v, path, (long long)lo, std::numeric_limits<long long>::max(), allowed));
}

float DsReader::real(const json& v, const std::string& path, const std::string& allowed,
                     const std::function<bool(double)>& ok) const {
  if (!v.is_number()) fail_value(v, path, allowed);
  double d = v.get<double>();
  float f = float(d);
  if (!std::isfinite(d) || !ok(d) || !std::isfinite(f) || !ok(double(f))) fail_value(v, path, allowed);
  return f;
}

const nlohmann::json& DsReader::object(const json& v, const std::string& path) const {
  if (!v.is_object()) fail_value(v, path, "an object {...}");
  return v;
}

void DsReader::resolved(const std::string& path, const std::string& value, const std::string& from) {
  lines_.push_back("config: " + path + " \"auto\" -> " + value + " (" + from + ")");
}

void DsReader::no_effect(const std::string& path, const std::string& why) {
  lines_.push_back("config: " + path + " is accepted and has no effect in tierzero: " + why);
}

}  // namespace tz
