// `tierzero bench calibrate`'s communication terms for the step-time model (issue 33), each measured with
// the communicator training uses, in its pieces, on every rank at once:
//  - each collective's bus rate (reduce-scatter, all-gather, all-reduce) and the latency of a small one;
//  - the synchronisation a collective waited on right after compute costs beyond that latency;
//  - how much of a collective in flight during compute runs concurrently with it (on a CPU node the
//    progress threads share the cores that compute: a negative figure is contention);
//  - the rate of fp32 <-> bf16 casts.
#pragma once

#include "comm/mpi_comm.h"
#include "perf/calibrate.h"
#include "zero/hardware.h"

namespace tz {

// Sets h's latency_us, intra_gbs (and inter_gbs: one node), the three collectives' rates, sync_us and
// comm_overlap. Collective over comm (2 ranks or more).
void measure_comm_terms(MpiCommunicator& comm, const CalibrateOptions& opt, Hardware& h);

// Sets h.cast_gbs: every rank casting at once, the node's rate.
void measure_cast_rate(int ranks, Hardware& h);

}  // namespace tz
