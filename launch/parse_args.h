// Shared Boost.Program_options handling: --help, unknown flags and bad values become clear errors.
#pragma once

#include <string>
#include <vector>

#include <boost/program_options.hpp>

namespace tz {

// Parses args into vm; prints help and returns false when --help was given. Throws tz::Error naming
// the flag for an unknown flag or a value of the wrong type.
bool parse_args(const std::vector<std::string>& args, const boost::program_options::options_description& desc,
                boost::program_options::variables_map& vm, const std::string& command);

// Reads an element count such as "500000000", "5e8" or "5e7" (DeepSpeed writes sizes as floats);
// throws tz::Error naming the flag for a fraction, a negative or unreadable value.
std::size_t parse_count(const std::string& flag, const std::string& text);

}  // namespace tz
