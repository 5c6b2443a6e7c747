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

// oneDNN's kernels and the OpenMP threads' stacks: every distinct matrix product of opt's model at its
// shape, in fp32 and in bf16, run once on the CPU backend with the planned workspace. Sets *products.
double measure_libraries(const CalibrateOptions& opt, int* products);

// Both, into a hardware file's memory section: the libraries, and the communication temporaries at
// comm's size (comm null or of one rank: none). Call first, before the rates.
MemoryLines measure_memory_lines(const CalibrateOptions& opt, Communicator* comm);

}  // namespace tz
