// Every rank's step in rank 0's records: each rank's phase times and tier bytes, exchanged in one small
// all-gather per step (9 doubles a rank), summarised per phase as min, median, max and the slowest rank;
// and the straggler, a rank whose own work (step less comm wait) over the last 10 steps exceeds
// --straggler-threshold x the median rank's (docs/metrics.md#every-rank).
#pragma once

#include <array>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace tz {

inline constexpr int kRankPhases = 6;  // data, forward, backward, optimizer, comm_wait, step
inline constexpr int kRankTiers = 3;   // device, host, nvme
extern const char* const kRankPhaseNames[kRankPhases];
extern const char* const kRankTierNames[kRankTiers];

// One rank's figures for one step.
struct RankSample {
  std::array<double, kRankPhases> ms{};
  std::array<double, kRankTiers> bytes{};
};

struct Straggler {
  int rank = -1;     // -1: none
  double ratio = 0;  // its own work over the window / the median rank's
};

class RankStats {
 public:
  static constexpr int kWindow = 10;   // steps the straggler's work is summed over
  static constexpr int kMinSteps = 5;  // steps seen before a straggler is named (the first are warm-up)
  // A rank less than this much slower per step than the median is never named: at steps of a few ms,
  // scheduling noise alone exceeds any ratio.
  static constexpr double kMinExcessMs = 1.0;

  RankStats(std::vector<std::string> hosts, double threshold);

  // Collective: every rank's sample of this step, in one all-gather on `comm`.
  void gather(Communicator& comm, const RankSample& mine);
  // Adds a step's samples without a communicator (tests).
  void add(std::vector<RankSample> all, double gather_ms);

  const std::vector<RankSample>& samples() const { return all_; }
  const std::vector<std::string>& hosts() const { return hosts_; }
  double gather_ms() const { return gather_ms_; }
  Straggler straggler() const { return straggler_; }

  // {"ms": {phase: {min, median, max, slowest_rank}}, "bytes": {tier: [per rank]}, "gather_ms"}.
  nlohmann::json record() const;
  // null, or {"rank", "host", "ratio"}.
  nlohmann::json straggler_record() const;

 private:
  void update_straggler();

  std::vector<std::string> hosts_;
  double threshold_;
  std::vector<RankSample> all_;
  double gather_ms_ = 0;
  std::deque<std::vector<double>> work_;  // the last kWindow steps' own work per rank
  Straggler straggler_;
};

// The median of `v` as one rank's value: the lower middle for an even count, so that of two ranks the
// faster one is the median (a straggler is compared with a real rank, not with a mean that includes it).
double median_rank_value(std::vector<double> v);

}  // namespace tz
