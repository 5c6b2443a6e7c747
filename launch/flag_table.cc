// The commands' flag tables in the order `tierzero help --markdown` prints them (see flag_table.h).
#include "launch/flag_table.h"

namespace tz {

std::vector<FlagTable> all_flag_tables() {
  std::vector<FlagTable> all;
  for (auto tables : {train_flag_tables, plan_flag_tables, data_flag_tables, ckpt_flag_tables,
                      report_flag_tables, bench_flag_tables, bench_gpu_flag_tables, doctor_flag_tables})
    for (FlagTable& t : tables()) all.push_back(std::move(t));
  return all;
}

}  // namespace tz
