// The tierzero command line: `tierzero <subcommand> [flags]`.
#pragma once

namespace tz {

// Runs the CLI; returns the process exit code. Errors are printed with the rank and exit non-zero.
int run_cli(int argc, char** argv);

}  // namespace tz
