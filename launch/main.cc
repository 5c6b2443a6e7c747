// tierzero: the one binary; subcommands are dispatched in launch/cli.cc.
#include "launch/cli.h"

int main(int argc, char** argv) { return tz::run_cli(argc, argv); }
