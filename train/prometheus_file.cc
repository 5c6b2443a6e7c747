// The Prometheus text exposition of a step (format 0.0.4: # HELP, # TYPE, one sample a line).
#include "train/prometheus_file.h"

#include <cmath>
#include <cstdio>

#include "model/file_io.h"

namespace tz {
namespace {

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

double value(const nlohmann::json& j) { return j.is_number() ? j.get<double>() : std::nan(""); }

class Exposition {
 public:
  explicit Exposition(std::string run_id) : run_id_(std::move(run_id)) {}
  void family(const char* name, const char* type, const char* help) {
    out_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    name_ = name;
  }
  // A sample of the current family; `labels`: extra labels, already formatted (k="v",...).
  void sample(double v, const std::string& labels = "") {
    out_ += name_ + "{run_id=\"" + run_id_ + "\"" + (labels.empty() ? "" : "," + labels) + "} " + number(v) +
            "\n";
  }
  const std::string& text() const { return out_; }

 private:
  std::string run_id_, name_, out_;
};

}  // namespace

std::string prometheus_text(const nlohmann::json& rec, const RankStats& ranks, const std::string& run_id,
                            const nlohmann::json& peaks) {
  Exposition e(run_id);
  e.family("tierzero_step", "gauge", "The last optimizer step trained.");
  e.sample(value(rec.at("step")));
  e.family("tierzero_step_duration_seconds", "gauge", "Wall time of the last step on rank 0.");
  e.sample(value(rec.at("ms").at("step")) / 1000);
  e.family("tierzero_tokens_total", "counter", "Tokens trained so far by the whole run, every rank's.");
  e.sample(value(rec.at("tokens")));
  e.family("tierzero_tokens_per_second", "gauge", "Tokens per second over the last step, every rank's.");
  e.sample(value(rec.at("tokens_per_s")));
  e.family("tierzero_loss", "gauge", "Training loss of the last step (mean over ranks).");
  e.sample(value(rec.at("loss")));
  e.family("tierzero_learning_rate", "gauge", "Learning rate of the last step.");
  e.sample(value(rec.at("lr")));
  e.family("tierzero_grad_norm", "gauge", "Global gradient norm of the last step, before clipping.");
  e.sample(value(rec.at("grad_norm")));
  e.family("tierzero_eta_seconds", "gauge", "Time left to --steps at the recent step rate.");
  e.sample(value(rec.at("eta_s")));
  e.family("tierzero_phase_duration_seconds", "gauge", "Time of each phase of the last step, per rank.");
  const auto& all = ranks.samples();
  for (int p = 0; p < kRankPhases; ++p)
    for (std::size_t r = 0; r < all.size(); ++r)
      e.sample(all[r].ms[std::size_t(p)] / 1000,
               std::string("phase=\"") + kRankPhaseNames[p] + "\",rank=\"" + std::to_string(r) + "\"");
  e.family("tierzero_memory_bytes", "gauge",
           "Bytes in use in each memory tier after the last step, per rank.");
  for (int t = 0; t < kRankTiers; ++t)
    for (std::size_t r = 0; r < all.size(); ++r)
      e.sample(all[r].bytes[std::size_t(t)],
               std::string("tier=\"") + kRankTierNames[t] + "\",rank=\"" + std::to_string(r) + "\"");
  e.family("tierzero_plan_peak_bytes", "gauge", "The memory plan's peak per rank in each tier.");
  for (int t = 0; t < kRankTiers; ++t)
    e.sample(value(peaks.value(kRankTierNames[t], nlohmann::json())),
             std::string("tier=\"") + kRankTierNames[t] + "\"");
  e.family("tierzero_comm_hidden_ratio", "gauge",
           "Share of the last step's collective time hidden behind compute on rank 0 (1 - wait / busy).");
  e.sample(value(rec.at("comm_overlap").at("hidden_fraction")));
  e.family("tierzero_straggler_rank", "gauge",
           "The rank named a straggler over the last 10 steps, or -1 when there is none.");
  e.sample(ranks.straggler().rank);
  e.family("tierzero_rank_gather_duration_seconds", "gauge",
           "Time of the last step's all-gather of every rank's figures.");
  e.sample(ranks.gather_ms() / 1000);
  return e.text();
}

void write_prometheus_textfile(const std::string& path, const std::string& text) {
  AtomicOutputFile out(path, "--prometheus-textfile");
  out.write(text.data(), text.size());
  out.commit();
}

}  // namespace tz
