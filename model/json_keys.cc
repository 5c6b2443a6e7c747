// check_json_keys: nlohmann's SAX parser with a handler that keeps only the path to the current value.
#include "model/json_keys.h"

#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.h"
#include "model/json_bounded.h"

namespace tz {
namespace {

using json = nlohmann::json;

class KeyCheck : public nlohmann::json_sax<json> {
 public:
  explicit KeyCheck(const JsonKeySchema& schema) : schema_(schema) {}

  // Set when a key is not allowed: the key with its place.
  const std::string& unknown() const { return unknown_; }

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(false); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    const Frame& f = frames_.back();
    if (f.keys && f.keys->count(k)) {
      key_ = k;
      return true;
    }
    unknown_ = join(f.shown, k);
    return false;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  struct Frame {
    std::string place, shown;        // "files[]", "files[3]"
    bool array = false;
    std::size_t next = 0;            // an array's next element
    const std::set<std::string>* keys = nullptr;  // an object's allowed keys
  };
  static std::string join(const std::string& parent, const std::string& key) {
    return parent.empty() ? key : parent + "." + key;
  }
  bool value() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().next;
    return true;
  }
  bool open(bool array) {
    if (int(frames_.size()) >= kMaxJsonDepth) return false;  // too deep: left to parse_json_bounded's refusal
    Frame f;
    f.array = array;
    if (!frames_.empty()) {
      Frame& parent = frames_.back();
      f.place = parent.array ? parent.place + "[]" : join(parent.place, key_);
      f.shown = parent.array ? parent.shown + "[" + std::to_string(parent.next) + "]" : join(parent.shown, key_);
      value();
    }
    if (!array) {
      const auto it = schema_.find(f.place);
      f.keys = it == schema_.end() ? nullptr : &it->second;
    }
    frames_.push_back(std::move(f));
    return true;
  }
  bool close() {
    frames_.pop_back();
    return true;
  }

  const JsonKeySchema& schema_;
  std::vector<Frame> frames_;
  std::string key_, unknown_;
};

}  // namespace

void check_json_keys(const std::string& text, const std::string& source, const JsonKeySchema& schema,
                     const std::string& what, const std::string& hint) {
  KeyCheck check(schema);
  json::sax_parse(text, &check);
  TZ_CHECK(check.unknown().empty(), source, ": '", check.unknown(), "' is not a key ", what, " has",
           hint.empty() ? "" : "; ", hint);
}

}  // namespace tz
