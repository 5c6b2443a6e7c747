// `tierzero plan`: the memory plan `train` would allocate for the same flags, printed per rank
// without allocating anything (and without MPI: the world size is a flag).
#include <boost/program_options.hpp>
#include <cstdio>
#include <algorithm>
#include <set>
#include <vector>

#include "core/error.h"
#include "launch/commands.h"
#include "launch/parse_args.h"
#include "launch/train_flags.h"
#include "train/trainer.h"
#include "zero/plan_advice.h"

namespace po = boost::program_options;

namespace tz {

int plan_command(const std::vector<std::string>& args) {
  TrainFlags f;
  int world = 1, rank = -1;
  po::options_description desc(
      "tierzero plan: print the memory plan of a training run (every buffer each rank would allocate, by "
      "state "
      "class and tier, against the budgets) without allocating it\n\nflags: every `tierzero train` flag, "
      "plus");
  desc.add_options()("world", po::value(&world)->default_value(world),
                     "number of ranks the job would run on")(
      "rank", po::value(&rank)->default_value(rank),
      "print only this rank's plan (-1: every distinct plan among ranks 0-63 and the last)");
  add_train_flags(desc, f);
  po::variables_map vm;
  if (!parse_args(args, desc, vm, "plan")) return 0;
  resolve_train_flags(f, vm);
  TZ_CHECK(world >= 1 && world <= (1 << 20), "--world must be in [1, 1048576], got ", world);
  TZ_CHECK(rank >= -1 && rank < world, "--rank must be in [0, ", world, ") or -1, got ", rank);
  for (const std::string& line : f.o.config_lines) std::printf("%s\n", line.c_str());
  // Every rank's shards have the same sizes (groups are padded to a multiple of the world), so the
  // ranks' plans can differ only through an edge case: look at the first 64 ranks and the last.
  std::vector<int> ranks;
  if (rank >= 0) ranks = {rank};
  for (int r = 0; rank < 0 && r < std::min(world, 64); ++r) ranks.push_back(r);
  if (rank < 0 && world > 64) ranks.push_back(world - 1);
  bool fits = true;
  std::set<std::string> printed;
  std::string advice;
  for (int r : ranks) {
    const MemoryPlan plan = plan_memory(plan_inputs(f.o, world, r));
    std::string table = plan.table();
    // Ranks own shards of the same sizes: print a rank's plan only when no rank's before was the same.
    if (printed.insert(table.substr(table.find('\n'))).second) std::printf("%s\n", table.c_str());
    const std::string problem = plan.fit_problem();
    if (problem.empty()) continue;
    fits = false;
    std::printf("rank %d does not fit: %s\n", r, problem.c_str());
    if (advice.empty()) advice = advice_text(plan);  // the first rank that does not fit
  }
  if (!advice.empty()) std::printf("%s\n", advice.c_str());
  std::printf("%s\n", fits ? "the plan fits every budget" : "the plan does not fit (see above)");
  return fits ? 0 : 1;
}

}  // namespace tz
