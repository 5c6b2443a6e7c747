// `tierzero help --markdown`: docs/configuration.md, generated from the commands' flag tables
// (launch/flag_table.h), the DeepSpeed key tables (launch/ds_keys.h) and the model presets, so that the
// reference cannot drift from what the program accepts (ctest docs_configuration_is_generated).
#pragma once

#include <string>

namespace tz {

// The whole of docs/configuration.md.
std::string help_markdown();

}  // namespace tz
