// OpProfile: a pool of timing events, pairs of them pending until collected, and rows by op name.
#include "core/op_profile.h"

#include "core/device.h"
#include "core/error.h"

namespace tz {

OpProfile::OpProfile(Device& dev) : dev_(dev) {}
OpProfile::~OpProfile() = default;

void OpProfile::name_gemms(const std::vector<GemmShape>& shapes) {
  for (const GemmShape& g : shapes) {
    if (g.name.empty()) continue;
    std::string& n = gemm_names_[{int(g.ta), int(g.tb), g.M, g.N, g.K}];
    if (n.empty()) {
      n = g.name;
    } else if (("|" + n + "|").find("|" + g.name + "|") == std::string::npos) {
      n += "|" + g.name;
    }
  }
}

std::string OpProfile::gemm_name(Trans ta, Trans tb, int M, int N, int K) const {
  auto it = gemm_names_.find({int(ta), int(tb), M, N, K});
  if (it != gemm_names_.end()) return it->second;
  return "gemm " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
}

Event& OpProfile::event(std::size_t i) {
  while (pool_.size() <= i) pool_.push_back(dev_.create_timing_event());
  return *pool_[i];
}

std::size_t OpProfile::begin(Stream& s) {
  const std::size_t i = next_++;
  event(i).record(s);
  return i;
}

std::size_t OpProfile::row_of(const std::string& name) {
  auto [it, added] = index_.emplace(name, rows_.size());
  if (added) rows_.push_back({name});
  return it->second;
}

void OpProfile::end(Stream& s, std::size_t token, const std::string& name, OpCost cost) {
  const std::size_t i = next_++;
  event(i).record(s);
  const std::size_t r = row_of(name);
  pending_.push_back({token, i, r});
  rows_[r].calls += 1;
  rows_[r].flops += cost.flops;
  rows_[r].bytes += cost.bytes;
}

std::size_t OpProfile::collect() {
  for (const Pending& p : pending_) {
    pool_[p.end]->synchronize();  // a call on another stream (a copy, a prefetch) may still run
    rows_[p.row].ms += pool_[p.end]->ms_since(*pool_[p.begin]);
  }
  const std::size_t n = pending_.size();
  pending_.clear();
  next_ = 0;
  return n;
}

void OpProfile::reset() {
  TZ_CHECK(pending_.empty(), "OpProfile::reset with calls not collected");
  rows_.clear();
  index_.clear();
}

double attention_forward_flops(const AttentionShape& a) {
  return 4.0 * a.B * a.NH * double(a.T) * a.T * a.hd / 2;
}

}  // namespace tz
