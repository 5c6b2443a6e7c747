// Small host-side collectives the training loop's start-up and checkpoints use: agreeing on the
// outcome of a step that may fail on some ranks, and exchanging strings.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace tz {

// Runs fn on this rank, then every rank learns whether any rank failed: a failing rank rethrows its
// own error, the others throw one naming the lowest failing rank and `what` it was doing. No rank is
// left waiting in a later collective for one that failed.
void on_every_rank(Communicator& comm, const std::string& what, const std::function<void()>& fn);

// Every rank's string, in rank order (collective).
std::vector<std::string> all_gather_strings(Communicator& comm, const std::string& mine);

}  // namespace tz
