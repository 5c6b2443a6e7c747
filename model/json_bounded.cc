// parse_json_bounded: a linear pre-scan bounds the nesting depth and finds each key's line; nlohmann's
// parser then reads the text with a callback that refuses a key repeated within one object.
#include "model/json_bounded.h"

#include <cstddef>
#include <set>
#include <vector>

#include "core/error.h"

namespace tz {
namespace {

using json = nlohmann::json;

std::string ending(const std::string& hint) { return hint.empty() ? "" : "; " + hint; }

// One pass over the text, O(1) memory beyond one line number per key: refuses nesting deeper than
// kMaxJsonDepth and returns the line of every object key, in the order the parser will report them. Text
// that is not JSON is left to the parser, which says where it is wrong.
std::vector<int> scan(const std::string& text, const std::string& source, const std::string& hint) {
  std::vector<int> key_lines;
  std::vector<char> open;  // '{' or '[' per level, at most kMaxJsonDepth
  bool in_string = false, escaped = false, key_next = false;
  int line = 1;
  for (const char c : text) {
    if (c == '\n') ++line;
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        if (key_next) key_lines.push_back(line);
        key_next = false;
        break;
      case '{':
      case '[':
        if (int(open.size()) == kMaxJsonDepth)
          TZ_FAIL(source, " nests arrays and objects deeper than ", kMaxJsonDepth, " levels (line ", line,
                  "); no file tierzero reads needs more than a few", ending(hint));
        open.push_back(c);
        key_next = c == '{';
        break;
      case '}':
      case ']':
        if (!open.empty()) open.pop_back();
        key_next = false;
        break;
      case ',':
        key_next = !open.empty() && open.back() == '{';
        break;
      case ' ':
      case '\t':
      case '\n':
      case '\r':
        break;
      default:
        key_next = false;
    }
  }
  return key_lines;
}

// Refuses a key repeated within one object, naming its path ("a.b", "a[].b") and line.
class DuplicateKeyCheck {
 public:
  DuplicateKeyCheck(const std::string& source, const std::string& hint, const std::vector<int>& key_lines)
      : source_(source), hint_(hint), key_lines_(key_lines) {}

  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        frames_.push_back({child_path(), {}, event == json::parse_event_t::array_start});
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!frames_.empty()) frames_.pop_back();
        last_key_.clear();
        break;
      case json::parse_event_t::key: {
        const std::size_t k = keys_seen_++;
        std::string key = parsed.get<std::string>();
        if (!frames_.empty() && !frames_.back().keys.insert(key).second) {
          const std::string at = k < key_lines_.size() ? " (line " + std::to_string(key_lines_[k]) + ")" : "";
          TZ_FAIL(source_, ": key '", join(frames_.back().path, key), "' is given twice", at, "; keep one",
                  ending(hint_));
        }
        last_key_ = std::move(key);
        break;
      }
      case json::parse_event_t::value:
        break;
    }
    return true;
  }

 private:
  struct Frame {
    std::string path;
    std::set<std::string> keys;
    bool array;
  };
  static std::string join(const std::string& parent, const std::string& key) {
    return parent.empty() ? key : parent + "." + key;
  }
  std::string child_path() const {
    if (frames_.empty()) return "";
    return frames_.back().array ? frames_.back().path + "[]" : join(frames_.back().path, last_key_);
  }

  const std::string& source_;
  const std::string& hint_;
  const std::vector<int>& key_lines_;
  std::vector<Frame> frames_;
  std::string last_key_;
  std::size_t keys_seen_ = 0;
};

// nlohmann's message without its "[json.exception.parse_error.101] " tag.
std::string without_tag(const std::string& what) {
  const auto at = what.find("] ");
  return at == std::string::npos ? what : what.substr(at + 2);
}

}  // namespace

json parse_json_bounded(const std::string& text, const std::string& source, const std::string& hint) {
  const std::vector<int> key_lines = scan(text, source, hint);
  try {
    return json::parse(text, DuplicateKeyCheck(source, hint, key_lines));
  } catch (const json::exception& e) {  // a syntax error (with line and column), or a number beyond a double
    TZ_FAIL(source, " is not valid JSON: ", without_tag(e.what()), ending(hint));
  }
}

}  // namespace tz
