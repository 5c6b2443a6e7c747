// Tests model/json_keys.h: the first key a schema does not list is refused naming its place with array
// indices; known keys at every place pass; deep nesting and invalid JSON are left to the parser.
#include "model/json_keys.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/common/error_message.h"

namespace tz {
namespace {

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

const JsonKeySchema kSchema = {{"", {"a", "list", "obj"}}, {"obj", {"x"}}, {"list[]", {"y", "inner"}},
                               {"list[].inner[]", {"z"}}};

TEST(JsonKeys, KnownKeysAtEveryPlacePass) {
  EXPECT_NO_THROW(check_json_keys(R"({"a": [1, {}], "obj": {"x": null},
      "list": [{"y": 1}, {"inner": [{"z": 2}, 3]}]})",
                                  "f.json", kSchema, "a test file", ""));
}

TEST(JsonKeys, TheFirstUnknownKeyIsNamedWithItsPlace) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"a": 1, "b": 2})", "'b'"},
      {R"({"obj": {"x": 1, "w": 2}})", "'obj.w'"},
      {R"({"list": [{"y": 1}, {"y": 2, "v": 3}]})", "'list[1].v'"},
      {R"({"list": [{"inner": [7, {"z": 1}, {"zz": 1}]}]})", "'list[0].inner[2].zz'"},
      {R"({"a": {"anything": 1}})", "'a.anything'"},  // an object where the schema lists none
  };
  for (const auto& [text, key] : cases) {
    const std::string m = testing::error_message([&] { check_json_keys(text, "f.json", kSchema, "a test file", "fix it"); });
    EXPECT_TRUE(has(m, "f.json: " + key + " is not a key a test file has; fix it")) << text << ": " << m;
  }
}

TEST(JsonKeys, DeepNestingAndInvalidJsonAreLeftToTheParser) {
  EXPECT_NO_THROW(check_json_keys(std::string(100000, '['), "f.json", kSchema, "a test file", ""));
  EXPECT_NO_THROW(check_json_keys(R"({"a": )", "f.json", kSchema, "a test file", ""));
}

}  // namespace
}  // namespace tz
