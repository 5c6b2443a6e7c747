// make_device_comm: the one place in comm/ that knows whether this build has NCCL. Compiled into the
// small library `comm_devices` (with comm_nccl and TZ_WITH_CUDA=1 when CUDA is built), so that `comm`
// itself links nothing from CUDA.
#include "comm/device_comm.h"

#include "core/error.h"

#if defined(TZ_WITH_CUDA) && TZ_WITH_CUDA
#include "comm/nccl_comm.h"
#include "core/cuda/cuda_device.h"
#endif

namespace tz {

std::unique_ptr<Communicator> make_device_comm(Communicator& host, Device& dev) {
  switch (dev.traits().collectives) {
    case DeviceCollectives::host:
      return nullptr;
    case DeviceCollectives::nccl:
#if defined(TZ_WITH_CUDA) && TZ_WITH_CUDA
      return make_nccl_world(host, dev);
#else
      TZ_FAIL("a ", dev.traits().name, " device, whose collectives are NCCL's, in a build without NCCL (this is a "
              "bug, please report it)");
#endif
  }
  TZ_FAIL("device kind '", dev.traits().name, "' names no known communicator");
}

}  // namespace tz
