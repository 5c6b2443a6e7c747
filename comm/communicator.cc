// Backend-independent parts of the Communicator interface: the names collectives go by in
// messages and metrics.
#include "comm/communicator.h"

namespace tz {

std::string collective_name(Collective c) {
  switch (c) {
    case Collective::reduce_scatter:
      return "reduce_scatter";
    case Collective::all_gather:
      return "all_gather";
    case Collective::all_reduce:
      return "all_reduce";
    case Collective::broadcast:
      return "broadcast";
    case Collective::barrier:
      return "barrier";
  }
  return "collective " + std::to_string(int(c));
}

}  // namespace tz
