// GroupState::take: the group's state buffers by their plan names (named here, listed by the plan).
#include "zero/group_state.h"

namespace tz {

std::string params_buffer(const std::string& g) { return "params " + g; }
std::string grad_buffer(const std::string& g) { return "grads " + g; }
std::string master_buffer(const std::string& g) { return "fp32 master " + g; }
std::string adam_m_buffer(const std::string& g) { return "adam m " + g; }
std::string adam_v_buffer(const std::string& g) { return "adam v " + g; }

void GroupState::take(PlannedBuffers& planned) {
  const std::string& n = spec->name;
  // Absent buffers (states on a file tier, a master the params serve as) leave an empty array that still
  // knows its home.
  auto array = [&](Tier home, const std::string& name) {
    return planned.has(name) ? PlacedArray<float>(home, planned.take<float>(name)) : PlacedArray<float>(home, {});
  };
  params = PlacedArray<std::uint8_t>(place->params_home, planned.has(params_buffer(n))
                                                           ? planned.take<std::uint8_t>(params_buffer(n))
                                                           : Buffer<std::uint8_t>());
  grad = PlacedArray<float>(place->grad_home, planned.take<float>(grad_buffer(n)));
  if (packed) {  // host buffers of bytes, the layout's
    packed_master = planned.take<std::uint8_t>(master_buffer(n));
    packed_m = planned.take<std::uint8_t>(adam_m_buffer(n));
    packed_v = planned.take<std::uint8_t>(adam_v_buffer(n));
    master = PlacedArray<float>(place->master_home, {});
    m = PlacedArray<float>(place->m_home, {});
    v = PlacedArray<float>(place->v_home, {});
    return;
  }
  master = array(place->master_home, master_buffer(n));
  m = array(place->m_home, adam_m_buffer(n));
  v = array(place->v_home, adam_v_buffer(n));
}

}  // namespace tz
