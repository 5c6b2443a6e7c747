// parse_json_bounded: nesting is refused beyond 64 levels in time linear in the text, a repeated key is
// refused naming its path and line, and invalid JSON names the source.
#include "model/json_bounded.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "tests/common/error_message.h"

namespace tz {
namespace {

using testing::error_message;

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

std::string nested(int depth) { return std::string(std::size_t(depth), '[') + std::string(std::size_t(depth), ']'); }

TEST(JsonBounded, SixtyFourLevelsAreReadAndSixtyFiveAreRefusedNamingTheDepthAndLine) {
  EXPECT_EQ(parse_json_bounded(nested(64), "doc").size(), 1u);
  const std::string e = error_message([] { parse_json_bounded("\n" + nested(65), "doc.json", "fix it"); });
  EXPECT_TRUE(has(e, "doc.json nests arrays and objects deeper than 64 levels (line 2)")) << e;
  EXPECT_TRUE(has(e, "; fix it")) << e;
  // Objects count as levels too.
  std::string objects;
  for (int i = 0; i < 65; ++i) objects += "{\"a\":";
  objects += "1" + std::string(65, '}');
  EXPECT_TRUE(has(error_message([&] { parse_json_bounded(objects, "o"); }), "deeper than 64 levels")) << objects;
}

// nlohmann's own parser with a callback grows its memory with the depth squared: the scan refuses first.
TEST(JsonBounded, AHundredThousandLevelsAreRefusedWithinTenMilliseconds) {
  const std::string text = std::string(100000, '[');
  const auto t0 = std::chrono::steady_clock::now();
  const std::string e = error_message([&] { parse_json_bounded(text, "deep"); });
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(has(e, "deep nests arrays and objects deeper than 64 levels (line 1)")) << e;
  EXPECT_LT(ms, 10.0);
}

TEST(JsonBounded, BracketsInsideStringsAreNotLevels) {
  const std::string text = "{\"k\": \"" + std::string(100, '[') + "\\\"{\"}";
  EXPECT_EQ(parse_json_bounded(text, "s")["k"].get<std::string>(), std::string(100, '[') + "\"{");
}

TEST(JsonBounded, ARepeatedKeyIsRefusedWithItsPathAndLine) {
  const std::string text = "{\n  \"a\": {\n    \"b\": 1,\n    \"c\": [{\"x\": 1}, {\"x\": 2}],\n    \"b\": 2\n  }\n}";
  const std::string e = error_message([&] { parse_json_bounded(text, "cfg.json", "hint"); });
  EXPECT_TRUE(has(e, "cfg.json: key 'a.b' is given twice (line 5); keep one; hint")) << e;
  // The same key in two objects of an array, or at two levels, is not repeated.
  EXPECT_NO_THROW(parse_json_bounded("[{\"x\": 1}, {\"x\": 2}]", "a"));
  EXPECT_NO_THROW(parse_json_bounded("{\"x\": {\"x\": 1}}", "b"));
  const std::string in_array = error_message([] { parse_json_bounded("[{}, {\"y\": {\"x\": 1, \"x\": 2}}]", "arr"); });
  EXPECT_TRUE(has(in_array, "arr: key '[].y.x' is given twice (line 1)")) << in_array;
  // Escapes are decoded before comparing: "\u0061" is "a".
  EXPECT_TRUE(has(error_message([] { parse_json_bounded(R"({"a": 1, "\u0061": 2})", "esc"); }), "given twice"));
}

TEST(JsonBounded, InvalidJsonNamesTheSourceAndWhere) {
  const std::string e = error_message([] { parse_json_bounded("{\n  \"a\": 1,\n}", "bad.json", "no commas"); });
  EXPECT_TRUE(has(e, "bad.json is not valid JSON: parse error at line 3, column 1")) << e;
  EXPECT_TRUE(has(e, "; no commas")) << e;
  EXPECT_TRUE(has(error_message([] { parse_json_bounded("[1e400]", "big"); }),
                  "big is not valid JSON: number overflow parsing '1e400'"));
}

}  // namespace
}  // namespace tz
