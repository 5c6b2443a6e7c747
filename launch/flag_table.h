// Every command's flag table, built by the same function the command parses its arguments with, so that
// `tierzero help --markdown` (launch/help_markdown.h) lists each flag without a second list of flags.
#pragma once

#include <boost/program_options.hpp>
#include <memory>
#include <string>
#include <vector>

namespace tz {

// One command's flags: its options_description (caption: "tierzero NAME: what it does\n\nflags..."),
// bound to variables this record owns (the table is only read, never parsed into).
struct FlagTable {
  std::string command;  // "train", "bench step"
  std::string also;     // a command whose every flag this one takes too ("train" for plan), or ""
  std::shared_ptr<const void> bound;
  std::shared_ptr<const boost::program_options::options_description> desc;
};

// The table a command's `describe(flags)` builds, over a default-constructed Flags.
template <typename Flags>
FlagTable flag_table(std::string command, boost::program_options::options_description (*describe)(Flags&),
                     std::string also = "") {
  auto flags = std::make_shared<Flags>();
  auto desc = std::make_shared<const boost::program_options::options_description>(describe(*flags));
  return {std::move(command), std::move(also), flags, desc};
}

// Each command file's tables (launch/*_cmd.cc), and all of them in the order the help lists them:
// train, plan, data, ckpt, report, bench, doctor.
std::vector<FlagTable> train_flag_tables();
std::vector<FlagTable> plan_flag_tables();
std::vector<FlagTable> data_flag_tables();
std::vector<FlagTable> ckpt_flag_tables();
std::vector<FlagTable> bench_flag_tables();
std::vector<FlagTable> bench_gpu_flag_tables();
std::vector<FlagTable> doctor_flag_tables();
std::vector<FlagTable> report_flag_tables();
std::vector<FlagTable> all_flag_tables();

}  // namespace tz
