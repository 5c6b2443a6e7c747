// The communicator for device buffers: on a cuda device, an NCCL world (of one rank too: the self
// communicator copies with memcpy) bootstrapped over the host communicator (MPI); on the cpu device the
// host communicator itself serves (the MPI backend works on the cpu device's memory). Host-side collectives (settings agreement, checkpoints,
// gathers into host memory) always use the host communicator.
#pragma once

#include <memory>

#include "comm/communicator.h"
#include "core/device.h"

namespace tz {

// Null when `host` serves device buffers too. Collective: every rank calls it, after making its device.
std::unique_ptr<Communicator> make_device_comm(Communicator& host, Device& dev);

}  // namespace tz
