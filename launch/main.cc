// tierzero: the one binary; subcommands are dispatched in launch/cli.cc.
#include "launch/cli.h"
#include "launch/signal_routing.h"

int main(int argc, char** argv) {
  tz::route_async_signals();  // before any thread starts: no signal handler runs on a computing thread
  return tz::run_cli(argc, argv);
}
