// Every kind of JSON file tierzero reads goes through parse_json_bounded: a key given twice, or nesting
// deeper than 64 levels, is refused in each, naming the file.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "launch/ds_config.h"
#include "launch/hardware_file.h"
#include "model/safetensors_reader.h"
#include "model/safetensors_writer.h"
#include "tests/common/error_message.h"
#include "tests/common/test_dir.h"
#include "train/checkpoint_manifest.h"

namespace tz {
namespace {

using testing::error_message;

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// A safetensors file: the 8-byte little-endian header length, the header, no tensor data.
void write_safetensors(const std::string& path, const std::string& header) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[std::size_t(i)] = char((std::uint64_t(header.size()) >> (8 * i)) & 0xff);
  write(path, bytes + header);
}

const std::string kDuplicate = "{\n  \"a\": 1,\n  \"a\": 2\n}\n";
const std::string kDeep = std::string(100000, '[');

TEST(JsonFiles, TheDeepSpeedConfigRefusesARepeatedKeyAndDeepNesting) {
  testing::TestDir dir;
  const std::string path = dir.file("ds.json");
  TrainOptions o;
  write(path, kDuplicate);
  std::string e = error_message([&] { load_ds_config(path, o, {}); });
  EXPECT_TRUE(has(e, path + ": key 'a' is given twice (line 3)")) << e;
  write(path, kDeep);
  e = error_message([&] { load_ds_config(path, o, {}); });
  EXPECT_TRUE(has(e, path + " nests arrays and objects deeper than 64 levels")) << e;
}

TEST(JsonFiles, AHardwareFileRefusesARepeatedKeyAndDeepNesting) {
  testing::TestDir dir;
  const std::string path = dir.file("hw.json");
  write(path, kDuplicate);
  std::string e = error_message([&] { load_hardware(path); });
  EXPECT_TRUE(has(e, "hardware file '" + path + "': key 'a' is given twice (line 3)")) << e;
  write(path, kDeep);
  e = error_message([&] { load_hardware(path); });
  EXPECT_TRUE(has(e, "hardware file '" + path + "' nests arrays and objects deeper than 64 levels")) << e;
}

TEST(JsonFiles, ASafetensorsHeaderRefusesARepeatedTensorAndDeepNesting) {
  testing::TestDir dir;
  const std::string path = dir.file("m.safetensors");
  const std::string t = R"({"dtype": "F32", "shape": [0], "data_offsets": [0, 0]})";
  write_safetensors(path, "{\"wte\": " + t + ",\n\"wte\": " + t + "}");
  std::string e = error_message([&] { SafetensorsReader r(path); });
  EXPECT_TRUE(has(e, "safetensors file '" + path + "': key 'wte' is given twice (line 2)")) << e;
  write_safetensors(path, kDeep);
  e = error_message([&] { SafetensorsReader r(path); });
  EXPECT_TRUE(has(e, "safetensors file '" + path + "' nests arrays and objects deeper than 64 levels")) << e;
}

TEST(JsonFiles, ACheckpointManifestRefusesARepeatedKeyAndDeepNesting) {
  testing::TestDir dir;
  const std::string path = dir.file("manifest.json");
  write(path, "{\n  \"step\": 1,\n  \"step\": 2\n}\n");  // a key a manifest has (another is refused as unknown)
  std::string e = error_message([&] { read_manifest(dir.path()); });
  EXPECT_TRUE(has(e, "checkpoint manifest '" + path + "': key 'step' is given twice (line 3)")) << e;
  EXPECT_TRUE(has(e, "resume from another one")) << e;
  write(path, kDeep);
  e = error_message([&] { read_manifest(dir.path()); });
  EXPECT_TRUE(has(e, "checkpoint manifest '" + path + "' nests arrays and objects deeper than 64 levels")) << e;
}

}  // namespace
}  // namespace tz
