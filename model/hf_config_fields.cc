#include "model/hf_config_fields.h"

#include <cmath>

#include "core/error.h"

namespace tz {
namespace {

std::string shown(const nlohmann::json& v) { return v.dump().substr(0, 64); }

}  // namespace

int HfFields::integer(const char* key, int fallback, int lo, int hi) const {
  if (!has(key)) return fallback;
  const nlohmann::json& v = at(key);
  TZ_CHECK(v.is_number_integer() && v.get<long long>() >= lo && v.get<long long>() <= hi, source_, ": \"", key,
           "\" must be a whole number in [", lo, ", ", hi, "], got ", shown(v), "; correct it in that file (a JSON number, no quotes)");
  return int(v.get<long long>());
}

double HfFields::number(const char* key, double fallback) const {
  if (!has(key)) return fallback;
  const nlohmann::json& v = at(key);
  TZ_CHECK(v.is_number() && std::isfinite(v.get<double>()), source_, ": \"", key, "\" must be a number, got ",
           shown(v), "; correct it in that file");
  return v.get<double>();
}

bool HfFields::boolean(const char* key, bool fallback) const {
  if (!has(key)) return fallback;
  const nlohmann::json& v = at(key);
  TZ_CHECK(v.is_boolean(), source_, ": \"", key, "\" must be true or false, got ", shown(v),
           "; correct it in that file (true or false, no quotes)");
  return v.get<bool>();
}

std::string HfFields::text(const char* key, const std::string& fallback) const {
  if (!has(key)) return fallback;
  const nlohmann::json& v = at(key);
  TZ_CHECK(v.is_string(), source_, ": \"", key, "\" must be a string, got ", shown(v), "; correct it in that file");
  return v.get<std::string>().substr(0, 256);
}

HfFields HfFields::object(const char* key) const {
  static const nlohmann::json empty = nlohmann::json::object();
  if (!has(key)) return HfFields(empty, source_);
  const nlohmann::json& v = at(key);
  TZ_CHECK(v.is_object(), source_, ": \"", key, "\" must be an object, got ", shown(v), "; correct it in that file");
  return HfFields(v, source_ + " (" + key + ")");
}

}  // namespace tz
