// Typed reads of a Hugging Face config.json's fields, each refusal naming the file and the field: what
// the families' config_from_hf use. A field that is absent or null takes the default Hugging Face's
// config class gives it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tz {

class HfFields {
 public:
  HfFields(const nlohmann::json& j, std::string source) : j_(j), source_(std::move(source)) {}

  bool has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  // A whole number in [lo, hi].
  int integer(const char* key, int fallback, int lo, int hi) const;
  // A finite number.
  double number(const char* key, double fallback) const;
  bool boolean(const char* key, bool fallback) const;
  std::string text(const char* key, const std::string& fallback) const;
  // The object under `key` (absent or null: none).
  HfFields object(const char* key) const;
  const std::string& source() const { return source_; }

 private:
  const nlohmann::json& at(const char* key) const { return j_.at(key); }
  const nlohmann::json& j_;
  std::string source_;
};

}  // namespace tz
