// Tests Hardware::from_json (zero/hardware.h): every number of a hardware file is bounded in its own unit
// before it is converted (a count or size of 1e300 would otherwise wrap in the conversion), the whole-
// number field is whole, and the message names the field and its range; a preset round-trips exactly.
#include "zero/hardware.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/common/error_message.h"

namespace tz {
namespace {

using testing::error_message;

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

TEST(HardwareFile, APresetRoundTripsExactly) {
  const Hardware h = hardware_preset("h100-80g");
  EXPECT_EQ(Hardware::from_json(h.to_json(), "h.json").to_json(), h.to_json());
}

TEST(HardwareFile, EveryNumberOutsideItsRangeIsRefusedNamingTheField) {
  const nlohmann::json base = hardware_preset("h100-80g").to_json();
  struct Case {
    const char* key;
    double value;
    const char* range;
  };
  for (const Case& c : {Case{"ranks_per_node", 0, "[1, 1048576]"}, Case{"ranks_per_node", 1e300, "[1, 1048576]"},
                        Case{"ranks_per_node", 18446744073709551616.0, "[1, 1048576]"},
                        Case{"device_bytes", -1, "[0, 72057594037927936]"}, Case{"host_bytes", 1e300, "[0, 72057594037927936]"},
                        Case{"nvme_bytes", 18446744073709551616.0, "[0, 72057594037927936]"},
                        Case{"device_gbs", 1e10, "[0, 1000000000]"}, Case{"nvme_read_gbs", -1, "[0, 1000000000]"},
                        Case{"inter_gbs", 1e300, "[0, 1000000000]"}, Case{"latency_us", 1e10, "[0, 1000000000]"}}) {
    SCOPED_TRACE(std::string(c.key) + " = " + std::to_string(c.value));
    nlohmann::json j = base;
    j[c.key] = c.value;
    const std::string m = error_message([&] { Hardware::from_json(j, "h.json"); });
    EXPECT_TRUE(has(m, std::string("h.json: hardware field '") + c.key + "' must be a number in " + c.range)) << m;
  }
  nlohmann::json j = base;
  j["ranks_per_node"] = 2.5;
  EXPECT_TRUE(has(error_message([&] { Hardware::from_json(j, "h.json"); }), "'ranks_per_node' must be a whole number"));
  j = base;
  j["step_tflops"]["bf16"] = 1e300;
  EXPECT_TRUE(has(error_message([&] { Hardware::from_json(j, "h.json"); }),
                  "hardware field 'step_tflops.bf16' must be 0 (not supported) or a number in [0.001, 1000000000]"));
  // A rate so small that the plan's times would overflow is refused like 1e300 (0 means not given).
  j = base;
  j["link_gbs"] = 1e-300;
  EXPECT_TRUE(has(error_message([&] { Hardware::from_json(j, "h.json"); }),
                  "hardware field 'link_gbs' is 1e-300: give 0 (not measured) or a rate of at least 0.001"));
  j = base;
  j["name"] = 7;
  EXPECT_TRUE(has(error_message([&] { Hardware::from_json(j, "h.json"); }), "hardware field 'name' must be a string"));
}

// "device" names a registered device kind; a file written before it said "cpu": true for the host.
TEST(HardwareFile, TheDeviceIsNamedByKindAndAnUnknownOneIsRefusedNamingTheFile) {
  nlohmann::json j = hardware_preset("cpu-node").to_json();
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(Hardware::from_json(j, "h.json").device, DeviceKind::cpu);
  j.erase("device");
  EXPECT_EQ(Hardware::from_json(j, "h.json").device, DeviceKind::cuda);
  j["cpu"] = true;
  EXPECT_EQ(Hardware::from_json(j, "h.json").device, DeviceKind::cpu);
  j["device"] = "gpu";
  EXPECT_EQ(Hardware::from_json(j, "h.json").device, DeviceKind::cuda);  // "device" wins
  j["device"] = "tpu";
  std::string m = error_message([&] { Hardware::from_json(j, "h.json"); });
  EXPECT_TRUE(has(m, "h.json: hardware field 'device': ")) << m;
  EXPECT_TRUE(has(m, "unknown device 'tpu': use cpu or cuda")) << m;
  j["device"] = 3;
  m = error_message([&] { Hardware::from_json(j, "h.json"); });
  EXPECT_TRUE(has(m, "h.json: hardware field 'device' must be a device name")) << m;
}

}  // namespace
}  // namespace tz
