// PlannedBuffers: name lookup, one take per buffer, and the completeness check.
#include "core/buffer_plan.h"

#include "core/error.h"

namespace tz {

std::size_t total_bytes(const std::vector<BufferSpec>& specs, MemoryKind k) {
  std::size_t t = 0;
  for (const BufferSpec& s : specs)
    if (s.kind == k) t += s.bytes;
  return t;
}

PlannedBuffers::PlannedBuffers(Device& dev, const std::vector<BufferSpec>& specs)
    : dev_(dev), specs_(specs), taken_(specs.size(), false) {
  for (std::size_t i = 0; i < specs_.size(); ++i)
    TZ_CHECK(index_.emplace(specs_[i].name, i).second, "the memory plan lists '", specs_[i].name, "' twice");
}

const BufferSpec& PlannedBuffers::claim(const std::string& name, std::size_t elem) {
  auto it = index_.find(name);
  TZ_CHECK(it != index_.end(), "'", name, "' is not in the memory plan; the plan and the code disagree");
  TZ_CHECK(!taken_[it->second], "'", name, "' was allocated twice from the memory plan");
  const BufferSpec& s = specs_[it->second];
  TZ_CHECK(s.bytes % elem == 0, "'", name, "' is planned as ", s.bytes, " bytes, not a whole number of ",
           elem, "-byte elements");
  taken_[it->second] = true;
  return s;
}

void PlannedBuffers::expect_all_taken() const {
  std::string missing;
  for (std::size_t i = 0; i < specs_.size(); ++i)
    if (!taken_[i]) missing += (missing.empty() ? "'" : ", '") + specs_[i].name + "'";
  TZ_CHECK(missing.empty(), "the memory plan lists buffers nothing allocated: ", missing);
}

}  // namespace tz
