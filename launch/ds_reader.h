// Reads a DeepSpeed config's values, each checked for type and range with a message that names the file,
// the key path, the value and what is allowed; checks each object's keys against its table (ds_keys.h);
// and collects the lines --config prints: every "auto" it resolves and every key accepted with no effect.
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "launch/ds_keys.h"

namespace tz {

// Which command-line flags the user gave explicitly (they override the file), by flag name without
// the leading dashes: flag_given("micro-batch"). With Boost.Program_options and default values this is
// `vm.count(f) && !vm[f].defaulted()`. An empty FlagGiven means no flag was given.
using FlagGiven = std::function<bool(const std::string& flag)>;

// "a.b" (or "b" when the parent is empty).
std::string join_key(const std::string& parent, const std::string& key);
// How a value reads in a message: JSON text, cut short for big objects and arrays.
std::string show_value(const nlohmann::json& v);
// "a string", "an integer", ...: a value's JSON type, as messages name it.
const char* json_kind(const nlohmann::json& v);
// A number as a printed line gives it: 6 significant digits ("0.0003", "589824", "1e+09").
std::string show_number(double x);

class DsReader {
 public:
  using json = nlohmann::json;

  DsReader(std::string source, FlagGiven flag_given);

  const std::string& source() const { return src_; }
  bool given(const char* flag) const { return given_ && given_(flag); }
  static const json* find(const json& obj, const char* key);
  static bool is_auto(const json& v) { return v.is_string() && v.get<std::string>() == "auto"; }

  // Every key of `obj` must be one `level` reads, a no-effect key (its value's type is checked, and a line
  // is printed), or a refused key at its accepted value; anything else stops the run, an unknown key with
  // the nearest known one.
  void check_keys(const json& obj, const std::string& path, const KeyLevel& level);
  // The nearest known key to an unknown `key` of the object at `path`, as the message suggests it.
  static std::string suggestion(const std::string& key, const std::string& path, const KeyLevel& level);

  [[noreturn]] void fail_value(const json& v, const std::string& path, const std::string& allowed) const;
  bool boolean(const json& v, const std::string& path) const;
  // An integer in [lo, hi]; a JSON float is accepted when it is whole (DeepSpeed configs write 5e8).
  long long integer(const json& v, const std::string& path, long long lo, long long hi,
                    const std::string& allowed) const;
  // An element count: a whole number >= lo (integral floats such as 5e8 included).
  std::size_t count(const json& v, const std::string& path, std::size_t lo) const;
  // A number satisfying `ok`, stored as float: it must stay finite (and keep `ok`) in single precision.
  float real(const json& v, const std::string& path, const std::string& allowed,
             const std::function<bool(double)>& ok) const;
  const json& object(const json& v, const std::string& path) const;

  // Records `config: <path> "auto" -> <value> (<from>)`.
  void resolved(const std::string& path, const std::string& value, const std::string& from);
  // Records `config: <path> is accepted and has no effect in tierzero: <why>`.
  void no_effect(const std::string& path, const std::string& why);
  std::vector<std::string>& lines() { return lines_; }

 private:
  std::string src_;
  FlagGiven given_;
  std::vector<std::string> lines_;
};

}  // namespace tz
