// `tierzero bench calibrate`'s communication terms for the step-time model (issue 33), each measured with
// the communicator training uses, in its pieces, on every rank at once:
//  - each collective's bus rate (reduce-scatter, all-gather, all-reduce) and the latency of a small one;
//  - the synchronisation a collective waited on right after compute costs beyond that latency;
//  - how much of a collective in flight during compute runs concurrently with it (on a CPU node the
//    progress threads share the cores that compute: a negative figure is contention);
//  - the rate of fp32 <-> bf16 casts.
#pragma once

#include <string>
#include <vector>

#include "comm/mpi_comm.h"
#include "perf/calibrate.h"
#include "zero/hardware.h"

namespace tz {

// What rounds of a noisy measurement give: the mean without the least and the largest round (the median
// with 2 rounds or fewer), and the quartiles (the rounds at 1/4 and 3/4 of the sorted order, to the
// nearest). A mean, not a median: where ranks share cores the rounds are bimodal (a round loses a scheduler
// tick or not), and a step pays their average. Empty: all three 0.
struct RoundSpread {
  double mean = 0, q1 = 0, q3 = 0;
};
RoundSpread round_spread(std::vector<double> rounds);

// Each collective's bus rate in training's pieces and a small all-reduce's latency over comm (2 ranks or
// more; collective), with comm's size as `nodes`: across nodes, one rank each, the network's
// (`bench calibrate --network`).
NetworkRates measure_collective_rates(MpiCommunicator& comm);

// Sets h's latency_us, intra_gbs (and inter_gbs: one node), the three collectives' rates, sync_us and
// comm_overlap. Collective over comm (2 ranks or more). Returns a line that gives the spread of the last
// two (their quartiles over the rounds, on the rank whose median was taken).
std::string measure_comm_terms(MpiCommunicator& comm, const CalibrateOptions& opt, Hardware& h);

// Sets h.cast_gbs: every rank casting at once, the node's rate.
void measure_cast_rate(int ranks, Hardware& h);

}  // namespace tz
