// `tierzero bench calibrate`: this machine's rates for the step-time model (zero/hardware.h), measured
// with the code paths training runs (first, the memory lines outside the plan's buffers:
// perf/calibrate_memory.h): the whole-step compute rate of a training step per dtype (bench step's
// forward + backward), the CPU Adam (bench adam), a host-tier copy, the NVMe store (bench io, with
// --nvme-path) and the optimizer's states on it (bench offload, every rank at once), the casts and, under
// mpirun with 2 or more ranks on this node, the collectives' terms (perf/calibrate_comm.h).
#pragma once

#include <cstdint>
#include <string>

#include "comm/communicator.h"
#include "model/model_config.h"
#include "zero/hardware.h"

namespace tz {

struct CalibrateOptions {
  ModelConfig model;
  std::string model_name = "gpt2";
  int micro_batch = 4, seq_len = 64;
  std::string nvme_path;  // empty: no NVMe rates
  std::uint64_t nvme_bytes = std::uint64_t(1) << 30;
};

// Collective when comm has more than one rank (every rank calls it). The step and Adam rates are
// measured with every rank of this node running at once (each with its OpenMP threads), so they are
// what each rank gets in training; the node's rates are those times the ranks.
Hardware calibrate(const CalibrateOptions& opt, Communicator* comm, bool quiet);

// Where `tierzero plan --hardware local` reads this machine's calibration:
// $TIERZERO_HARDWARE, else $XDG_CONFIG_HOME/tierzero/hardware.json, else ~/.config/tierzero/hardware.json.
std::string local_hardware_path();

}  // namespace tz
