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
  if (planned.has(params_buffer(n))) params = planned.take<std::uint8_t>(params_buffer(n));
  grad = planned.take<float>(grad_buffer(n));
  if (planned.has(master_buffer(n))) master = planned.take<float>(master_buffer(n));
  if (planned.has(adam_m_buffer(n))) m = planned.take<float>(adam_m_buffer(n));
  if (planned.has(adam_v_buffer(n))) v = planned.take<float>(adam_v_buffer(n));
}

}  // namespace tz
