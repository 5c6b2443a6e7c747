// Turns Boost.Program_options exceptions into tz::Error messages that name the command and flag.
#include "launch/parse_args.h"

#include <cmath>
#include <cstdlib>
#include <iostream>

#include "core/error.h"

namespace po = boost::program_options;

namespace tz {

bool parse_args(const std::vector<std::string>& args, const po::options_description& desc, po::variables_map& vm,
                const std::string& command) {
  try {
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    if (vm.count("help")) {
      std::cout << desc << "\n";
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    TZ_FAIL("tierzero ", command, ": ", e.what(), "; see `tierzero ", command, " --help` for its flags");
  }
  return true;
}

std::size_t parse_count(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  TZ_CHECK(end && *end == '\0' && !text.empty(), "--", flag, " '", text, "' is not a number (e.g. 500000000 or 5e8)");
  TZ_CHECK(v >= 0 && v == std::floor(v) && v < 1e18, "--", flag, " must be a whole, non-negative element count, got ",
           text, "; give a count such as 500000000 or 5e8");
  return std::size_t(v);
}

}  // namespace tz
