// check_outputs: the run's outputs as one set (model/output_set.h), and --save-hf's own rules.
#include "train/output_checks.h"

#include "core/error.h"
#include "model/hf_folder_writer.h"
#include "model/model_family.h"
#include "model/output_set.h"

namespace tz {

std::vector<ProtectedInput> protect_inputs(const TrainOptions& opt) {
  std::vector<ProtectedInput> in;
  if (opt.data != kDefaultData) in.emplace_back(opt.data, "--data");
  in.emplace_back(opt.val_data, "--val-data");
  in.emplace_back(opt.init_from, "--init-from");
  in.emplace_back(opt.config, "--config");
  return in;
}

void check_outputs(const TrainOptions& opt) {
  // The final checkpoint folder (--save-dir/step-N) is inside --save-dir, so no output may take it either.
  check_planned_outputs({{"--save-dir", opt.save_dir, PlannedKind::checkpoints},
                         {"--save-safetensors", opt.save_safetensors, PlannedKind::file},
                         {"--metrics", opt.metrics, PlannedKind::file},
                         {"--prometheus-textfile", opt.prometheus_textfile, PlannedKind::file},
                         {"--save-hf", opt.save_hf, PlannedKind::folder}});
  if (!opt.save_hf.empty()) {
    check_hf_output_folder(opt.save_hf, "--save-hf");
    model_family(opt.model).hf_config(opt.model);  // a shape no Hugging Face architecture holds is refused now
  }
}

}  // namespace tz
