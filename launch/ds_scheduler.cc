// The `scheduler` section of a DeepSpeed config (see ds_scheduler.h). DeepSpeed passes scheduler.params
// to the scheduler's constructor as keyword arguments, so each type takes exactly its constructor's
// parameters, with the constructor's defaults.
#include "launch/ds_scheduler.h"

#include <limits>
#include <string>

#include "core/error.h"

namespace tz {
namespace {

using json = nlohmann::json;

constexpr long long kIntMax = std::numeric_limits<int>::max();
const char* const kImplemented = "WarmupLR, WarmupDecayLR and WarmupCosineLR";

LrSchedule schedule_of(const DsReader& r, const json* type) {
  if (!type) TZ_FAIL(r.source(), ": scheduler.type is missing; set it to one of ", kImplemented);
  if (!type->is_string() || DsReader::is_auto(*type))
    r.fail_value(*type, "scheduler.type", "\"WarmupLR\", \"WarmupDecayLR\" or \"WarmupCosineLR\"");
  const std::string name = type->get<std::string>();
  if (name == "WarmupLR") return LrSchedule::warmup;
  if (name == "WarmupDecayLR") return LrSchedule::warmup_decay;
  if (name == "WarmupCosineLR") return LrSchedule::warmup_cosine;
  if (unimplemented_deepspeed_schedulers().count(name))
    TZ_FAIL(
        r.source(), ": scheduler.type ", show_value(*type),
        " is a DeepSpeed scheduler that tierzero does not implement in this version; tierzero implements ",
        kImplemented);
  TZ_FAIL(r.source(), ": scheduler.type ", show_value(*type),
          " is not a scheduler tierzero knows (DeepSpeed would look it up in torch.optim.lr_scheduler, which "
          "tierzero does not have); tierzero implements ",
          kImplemented, " (the names are case-sensitive, as in DeepSpeed)");
}

// A parameter of another of the three schedulers is named as such: DeepSpeed's constructor would refuse
// it too. Anything else goes through the ordinary key check.
void check_params(DsReader& r, const json& params, LrSchedule s, const std::string& name) {
  const KeyLevel& level = scheduler_params_keys(s);
  for (const auto& [key, value] : params.items()) {
    if (level.knows(key)) continue;
    for (LrSchedule other : {LrSchedule::warmup, LrSchedule::warmup_decay, LrSchedule::warmup_cosine}) {
      if (!scheduler_params_keys(other).reads(key)) continue;
      std::string takes;
      for (const auto& k : level.read) takes += (takes.empty() ? "" : ", ") + std::string(k.name);
      TZ_FAIL(r.source(), ": 'scheduler.params.", key, "' is not a parameter of ", name,
              " (DeepSpeed's constructor would refuse it too); ", name, " takes ", takes,
              " and last_batch_iteration");
    }
  }
  r.check_keys(params, "scheduler.params", level);
}

}  // namespace

void read_scheduler(DsReader& r, const json& v, TrainOptions& opt, const json* optimizer_lr) {
  r.object(v, "scheduler");
  r.check_keys(v, "scheduler", scheduler_keys());
  const json* type = DsReader::find(v, "type");
  const LrSchedule s = schedule_of(r, type);
  const std::string name = type->get<std::string>();
  const json none = json::object();
  const json* params = DsReader::find(v, "params");
  if (params)
    r.object(*params, "scheduler.params");
  else
    params = &none;
  check_params(r, *params, s, name);

  const std::size_t first_line = r.lines().size();
  const std::string p = "scheduler.params.";
  auto find = [&](const char* key) { return DsReader::find(*params, key); };
  // DeepSpeed's defaults for what the file leaves out; the peak of WarmupCosineLR is the optimizer's lr.
  LrConfig c = opt.lr;
  c.schedule = s;
  c.warmup = 1000;
  c.warmup_type = WarmupType::log;
  c.total_num_steps = 0;
  c.warmup_min_ratio = 0.0f;
  c.cos_min_ratio = 1e-4f;
  if (s != LrSchedule::warmup_cosine) c.min_lr = 0.0f, c.lr = 1e-3f;

  if (auto* x = find("warmup_num_steps")) {
    if (DsReader::is_auto(*x)) {
      c.warmup = opt.lr.warmup;
      r.resolved(p + "warmup_num_steps", std::to_string(c.warmup),
                 "--warmup, as Hugging Face resolves it from its warmup steps");
    } else {
      c.warmup = int(r.integer(*x, p + "warmup_num_steps", 0, kIntMax,
                               "an integer >= 0 (DeepSpeed raises it to at least 2)"));
    }
  }
  if (auto* x = find("warmup_type")) {
    if (!x->is_string() || (x->get<std::string>() != "log" && x->get<std::string>() != "linear"))
      r.fail_value(*x, p + "warmup_type", "\"log\" or \"linear\"");
    c.warmup_type = parse_warmup_type(x->get<std::string>());
  }
  if (s != LrSchedule::warmup) {
    const json* x = find("total_num_steps");
    if (!x)
      TZ_FAIL(r.source(), ": scheduler.params.total_num_steps is missing; ", name,
              " requires it (DeepSpeed's constructor has no default for it): give the number of steps the "
              "schedule spans, or \"auto\" for --steps");
    if (DsReader::is_auto(*x)) {
      c.total_num_steps = opt.steps;
      r.resolved(p + "total_num_steps", std::to_string(opt.steps),
                 "--steps, as Hugging Face resolves it from its number of training steps");
    } else {
      c.total_num_steps = int(r.integer(*x, p + "total_num_steps", 1, kIntMax, "an integer >= 1"));
    }
  }
  const char* ratio = "a number in [0, 1] (a fraction of the optimizer's lr)";
  auto in01 = [](double d) { return d >= 0 && d <= 1; };
  if (auto* x = find("warmup_min_ratio"))
    c.warmup_min_ratio = r.real(*x, p + "warmup_min_ratio", ratio, in01);
  if (auto* x = find("cos_min_ratio")) c.cos_min_ratio = r.real(*x, p + "cos_min_ratio", ratio, in01);
  bool max_lr_from_file = s != LrSchedule::warmup_cosine;  // DeepSpeed's default 0.001 counts as the file's
  if (auto* x = find("warmup_min_lr")) {
    if (DsReader::is_auto(*x)) {
      c.min_lr = 0.0f;
      r.resolved(p + "warmup_min_lr", "0", "as Hugging Face resolves it");
    } else {
      c.min_lr = r.real(*x, p + "warmup_min_lr", "a number >= 0", [](double d) { return d >= 0; });
    }
  }
  if (auto* x = find("warmup_max_lr")) {
    if (DsReader::is_auto(*x)) {
      max_lr_from_file = false;
      c.lr = opt.lr.lr;
      r.resolved(p + "warmup_max_lr", show_number(c.lr),
                 "the optimizer's lr (optimizer.params.lr or --lr), as Hugging Face resolves it");
    } else {
      c.lr = r.real(*x, p + "warmup_max_lr", "a number > 0", [](double d) { return d > 0; });
    }
  }
  if (s != LrSchedule::warmup_cosine && c.min_lr > c.lr)
    TZ_FAIL(r.source(), ": scheduler.params.warmup_min_lr ", show_number(c.min_lr),
            " is above warmup_max_lr ", show_number(c.lr),
            "; the warm-up rises from warmup_min_lr to warmup_max_lr");

  // --lr-schedule chooses another schedule: this one's parameters belong to it, so none applies.
  if (r.given("lr-schedule")) {
    r.lines().resize(first_line);
    return;
  }
  opt.lr.schedule = c.schedule;
  opt.lr.warmup_type = c.warmup_type;
  opt.lr.total_num_steps = c.total_num_steps;
  opt.lr.warmup_min_ratio = c.warmup_min_ratio;
  opt.lr.cos_min_ratio = c.cos_min_ratio;
  if (!r.given("warmup")) opt.lr.warmup = c.warmup;
  if (s == LrSchedule::warmup_cosine) return;
  if (!r.given("min-lr")) opt.lr.min_lr = c.min_lr;
  if (r.given("lr")) return;
  if (optimizer_lr && max_lr_from_file && float(optimizer_lr->get<double>()) != c.lr)
    r.lines().push_back("config: optimizer.params.lr " + show_number(optimizer_lr->get<double>()) +
                        " has no effect: scheduler " + name + " sets the lr, with warmup_max_lr " +
                        show_number(c.lr) + " as its peak, as in DeepSpeed");
  opt.lr.lr = c.lr;
}

}  // namespace tz
