// `tierzero bench calibrate`'s memory lines (issue 33): what a rank holds outside the memory plan's
// buffers that only a measurement can say, each the growth of the process's peak resident set (VmHWM,
// the kernel's count) over buffers already resident, measured before anything else in the process has
// run a collective or a matrix product. docs/planning.md#outside-the-buffers says how the plan scales them.
#pragma once

#include "comm/communicator.h"
#include "perf/calibrate.h"
#include "zero/hardware.h"

namespace tz {

// Open MPI's temporaries and shared-memory transport while a step's collectives run in pieces of
// `piece_bytes`: a reduce-scatter, an all-reduce and an all-gather of 16 pieces per rank, less the
// communicator's staging (a planned line of its own). The largest growth over the ranks; collective.
// -1 where the peak resident set cannot be reset (/proc/self/clear_refs refused).
double measure_comm_temporaries(Communicator& comm, std::size_t piece_bytes);

// What a training step holds outside the plan's buffers, all libraries and code together: oneDNN's
// kernels (JIT code) and its per-call buffers, the C library's heap, the code pages the step touches,
// the OpenMP threads' stacks. The growth over the plan's buffers of two fp32 steps of opt's model on the
// training path (bench step's, one rank, after a warm-up step), at this process's threads. Sets *products
// to the model's distinct fp32 matrix products, over which the plan scales the figure.
double measure_libraries(const CalibrateOptions& opt, int* products);

// Both, into a hardware file's memory section: the libraries (measured on every rank at once, the largest
// kept: one fresh measurement per rank, and they differ by a few MiB), then the communication temporaries
// at comm's size (comm null or of one rank: none). Collective over comm; call first, before the rates.
MemoryLines measure_memory_lines(const CalibrateOptions& opt, Communicator* comm);

}  // namespace tz
