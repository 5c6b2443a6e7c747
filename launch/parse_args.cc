// Turns Boost.Program_options exceptions into tz::Error messages that name the command and flag.
#include "launch/parse_args.h"

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
    TZ_FAIL("tierzero ", command, ": ", e.what(), " (see tierzero ", command, " --help)");
  }
  return true;
}

}  // namespace tz
