// The one JSON reader for every JSON document tierzero reads (configs, hardware files, safetensors
// headers, checkpoint manifests, metrics lines): bounded in time and memory by the text's size.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tz {

// The deepest nesting of arrays and objects accepted: DeepSpeed configs, manifests and headers use 4 or
// fewer levels.
inline constexpr int kMaxJsonDepth = 64;

// Parses `text`, refusing (tz::Error, naming `source` and the line) invalid JSON, nesting deeper than
// kMaxJsonDepth and a key given twice in one object (nlohmann would keep the last silently). The depth is
// checked by one linear scan before the parser runs, so a 100000-deep `[[[[...` costs no more than its
// bytes. `hint`, when given, ends each message (what the user should do, e.g. "resume from another one").
nlohmann::json parse_json_bounded(const std::string& text, const std::string& source, const std::string& hint = "");

}  // namespace tz
