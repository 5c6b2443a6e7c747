// RankStats: the per-step all-gather, its summary and the straggler.
#include "train/rank_stats.h"

#include <algorithm>
#include <chrono>

namespace tz {

const char* const kRankPhaseNames[kRankPhases] = {"data",      "forward",   "backward",
                                                  "optimizer", "comm_wait", "step"};
const char* const kRankTierNames[kRankTiers] = {"device", "host", "nvme"};

double median_rank_value(std::vector<double> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + (v.size() - 1) / 2;
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

RankStats::RankStats(std::vector<std::string> hosts, double threshold)
    : hosts_(std::move(hosts)), threshold_(threshold) {}

void RankStats::gather(Communicator& comm, const RankSample& mine) {
  constexpr int kN = kRankPhases + kRankTiers;
  const auto t0 = std::chrono::steady_clock::now();
  std::array<double, kN> send{};
  std::copy(mine.ms.begin(), mine.ms.end(), send.begin());
  std::copy(mine.bytes.begin(), mine.bytes.end(), send.begin() + kRankPhases);
  std::vector<double> recv(std::size_t(kN) * comm.size());
  if (comm.size() > 1)
    comm.all_gather(send.data(), recv.data(), kN, DType::f64)->wait();
  else
    std::copy(send.begin(), send.end(), recv.begin());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::vector<RankSample> all(std::size_t(comm.size()));
  for (std::size_t r = 0; r < all.size(); ++r) {
    std::copy(recv.begin() + r * kN, recv.begin() + r * kN + kRankPhases, all[r].ms.begin());
    std::copy(recv.begin() + r * kN + kRankPhases, recv.begin() + (r + 1) * kN, all[r].bytes.begin());
  }
  add(std::move(all), ms);
}

void RankStats::add(std::vector<RankSample> all, double gather_ms) {
  all_ = std::move(all);
  gather_ms_ = gather_ms;
  std::vector<double> work(all_.size());
  for (std::size_t r = 0; r < all_.size(); ++r)
    work[r] = std::max(0.0, all_[r].ms[5] - all_[r].ms[4]);  // step less comm_wait
  work_.push_back(std::move(work));
  if (work_.size() > std::size_t(kWindow)) work_.pop_front();
  update_straggler();
}

void RankStats::update_straggler() {
  straggler_ = {};
  const std::size_t n = all_.size();
  if (n < 2 || work_.size() < std::size_t(kMinSteps)) return;
  std::vector<double> sum(n, 0.0);
  for (const auto& w : work_)
    for (std::size_t r = 0; r < n && r < w.size(); ++r) sum[r] += w[r];
  const double median = median_rank_value(sum);
  const auto worst = std::max_element(sum.begin(), sum.end());
  if (median <= 0 || *worst <= threshold_ * median) return;
  if (*worst - median < kMinExcessMs * double(work_.size())) return;
  straggler_.rank = int(worst - sum.begin());
  straggler_.ratio = *worst / median;
}

nlohmann::json RankStats::record() const {
  nlohmann::json ms = nlohmann::json::object(), bytes = nlohmann::json::object();
  for (int p = 0; p < kRankPhases; ++p) {
    std::vector<double> v;
    for (const RankSample& s : all_) v.push_back(s.ms[std::size_t(p)]);
    if (v.empty()) continue;
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    ms[kRankPhaseNames[p]] = {
        {"min", *lo}, {"median", median_rank_value(v)}, {"max", *hi}, {"slowest_rank", int(hi - v.begin())}};
  }
  for (int t = 0; t < kRankTiers; ++t) {
    nlohmann::json per = nlohmann::json::array();
    for (const RankSample& s : all_) per.push_back(std::uint64_t(s.bytes[std::size_t(t)]));
    bytes[kRankTierNames[t]] = per;
  }
  return {{"ms", ms}, {"bytes", bytes}, {"gather_ms", gather_ms_}};
}

nlohmann::json RankStats::straggler_record() const {
  if (straggler_.rank < 0) return nullptr;
  const std::string host = std::size_t(straggler_.rank) < hosts_.size() ? hosts_[std::size_t(straggler_.rank)]
                                                                        : std::string("unknown");
  return {{"rank", straggler_.rank}, {"host", host}, {"ratio", straggler_.ratio}};
}

}  // namespace tz
