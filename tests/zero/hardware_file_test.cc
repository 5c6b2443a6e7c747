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

namespace tz {
namespace {

// The memory section (issue 33): what bench calibrate measured round-trips, every malformed entry is
// refused naming it, and the communication temporaries at a world size are the measurement there, else the
// line through the two nearest, never below the least.
TEST(HardwareFile, TheMeasuredMemoryLinesRoundTripAndMalformedOnesAreRefused) {
  Hardware h = hardware_preset("h100-80g");
  h.memory.comm_piece_bytes = 4 << 20;
  h.memory.add_comm(4, 30e6);
  h.memory.add_comm(2, 10e6);
  h.memory.libraries = 3e6;
  h.memory.products = 34;
  h.memory.heap = "tcmalloc";
  h.memory.comm_between_nodes = 7.5e6;
  const Hardware back = Hardware::from_json(h.to_json(), "h.json");
  EXPECT_EQ(back.memory, h.memory);
  nlohmann::json old = h.to_json();  // a file from before the heap was recorded
  old["memory"].erase("heap_allocator");
  EXPECT_EQ(Hardware::from_json(old, "h.json").memory.heap, "");
  old["memory"].erase("comm_between_nodes_bytes");  // a file from before the hosts' temporaries: not measured
  EXPECT_EQ(Hardware::from_json(old, "h.json").memory.comm_between_nodes, -1);
  ASSERT_EQ(back.memory.comm.size(), 2u);
  EXPECT_EQ(back.memory.comm[0].ranks, 2);  // kept ascending
  struct Case {
    nlohmann::json memory;
    const char* says;
  };
  for (const Case& c :
       {Case{{{"comm_piece_bytes", 4194304}, {"comm_temporaries", 5}},
             "'memory.comm_temporaries' must be a list"},
        Case{{{"comm_piece_bytes", 4194304}, {"comm_temporaries", {{{"ranks", 2}}}}},
             "must be {\"ranks\": N, \"bytes\": B}"},
        Case{{{"comm_piece_bytes", 4194304}, {"comm_temporaries", {{{"ranks", 1}, {"bytes", 5}}}}},
             "whole number of at least 2"},
        Case{{{"comm_piece_bytes", 4194304}, {"comm_temporaries", {{{"ranks", 2.5}, {"bytes", 5}}}}},
             "whole number of at least 2"},
        Case{{{"comm_piece_bytes", 4194304}, {"comm_temporaries", {{{"ranks", 2}, {"bytes", -5}}}}},
             "bytes -5 at 2 ranks"},
        Case{{{"comm_piece_bytes", 4194304}, {"comm_temporaries", {{{"ranks", 2}, {"bytes", 1e300}}}}},
             "bytes 1e+300 at 2 ranks"},
        Case{{{"comm_piece_bytes", 4194304},
              {"comm_temporaries", {{{"ranks", 2}, {"bytes", 5}}, {{"ranks", 2}, {"bytes", 6}}}}},
             "gives 2 ranks twice"},
        Case{{{"comm_temporaries", {{{"ranks", 2}, {"bytes", 5}}}}}, "needs the 'comm_piece_bytes'"},
        Case{{{"libraries_bytes", 5}}, "needs the 'libraries_products'"},
        Case{{{"comm_between_nodes_bytes", 5}},
             "'memory.comm_between_nodes_bytes' needs the 'comm_piece_bytes'"},
        Case{{{"comm_piece_bytes", 4194304}, {"comm_between_nodes_bytes", -3}},
             "'memory.comm_between_nodes_bytes' must be a number in [-1"},
        Case{{{"comm_piece_bytes", 4194304}, {"comm_between_nodes_bytes", "5"}},
             "'memory.comm_between_nodes_bytes' must be a number in [-1"},
        Case{{{"libraries_bytes", -2}, {"libraries_products", 3}},
             "'memory.libraries_bytes' must be a number in [-1"},
        Case{{{"libraries_products", 2.5}, {"libraries_bytes", 5}},
             "'memory.libraries_products' must be a whole number"},
        Case{{{"heap_allocator", 5}}, "'memory.heap_allocator' must be an allocator's name"},
        Case{{{"heap_allocator", "tc malloc; rm"}}, "'memory.heap_allocator' must be an allocator's name"},
        Case{5, "'memory' must be an object"}}) {
    SCOPED_TRACE(c.memory.dump());
    nlohmann::json j = h.to_json();
    j["memory"] = c.memory;
    const std::string m = error_message([&] { Hardware::from_json(j, "h.json"); });
    EXPECT_TRUE(has(m, "h.json") && has(m, c.says)) << m;
  }
}

// A measurement at another piece size replaces the communication lines measured at the old one, in a node
// and between nodes alike; at the same size they stay.
TEST(HardwareFile, CommunicationLinesAtAnotherPieceSizeAreDropped) {
  MemoryLines m;
  m.set_comm_piece_bytes(4 << 20);
  m.add_comm(2, 10e6);
  m.comm_between_nodes = 3e6;
  m.set_comm_piece_bytes(4 << 20);
  ASSERT_EQ(m.comm.size(), 1u);
  EXPECT_EQ(m.comm[0].bytes, 10e6);
  EXPECT_EQ(m.comm_between_nodes, 3e6);
  m.set_comm_piece_bytes(1 << 20);
  EXPECT_TRUE(m.comm.empty());
  EXPECT_EQ(m.comm_between_nodes, -1);
  EXPECT_EQ(m.comm_piece_bytes, double(1 << 20));
}

TEST(HardwareFile, CommunicationTemporariesAtAWorldSizeComeFromTheNearestMeasurements) {
  MemoryLines m;
  EXPECT_EQ(m.comm_at(2), -1);  // not measured
  m.add_comm(2, 10);
  std::string how;
  EXPECT_EQ(m.comm_at(2, &how), 10);
  EXPECT_EQ(m.comm_at(8, &how), 10);  // one measurement: taken as is, and said so
  EXPECT_TRUE(has(how, "measured at 2 ranks only, not scaled")) << how;
  m.add_comm(4, 18);
  m.add_comm(3, 13);
  m.add_comm(3, 15);  // replaces
  ASSERT_EQ(m.comm.size(), 3u);
  EXPECT_EQ(m.comm_at(3, &how), 15);
  EXPECT_TRUE(has(how, "measured at 3 ranks")) << how;
  EXPECT_DOUBLE_EQ(m.comm_at(8, &how), 18 + 4 * 3);  // beyond: the line through 3 and 4
  EXPECT_TRUE(has(how, "through the measurements at 3 and 4 ranks")) << how;
  MemoryLines falling;
  falling.add_comm(2, 10);
  falling.add_comm(4, 6);
  EXPECT_DOUBLE_EQ(falling.comm_at(3), 8);
  EXPECT_DOUBLE_EQ(falling.comm_at(64), 6);  // never below the least measured
}

}  // namespace
}  // namespace tz
