// Subcommand entry points; each parses its own flags (Boost.Program_options) and returns an exit code.
#pragma once

#include <string>
#include <vector>

namespace tz {

int train_command(const std::vector<std::string>& args);
int plan_command(const std::vector<std::string>& args);
int data_command(const std::vector<std::string>& args);
int bench_command(const std::vector<std::string>& args);
int ckpt_command(const std::vector<std::string>& args);
int doctor_command(const std::vector<std::string>& args);
int report_command(const std::vector<std::string>& args);

}  // namespace tz
