// Plan advice: candidate changes re-planned with plan_memory(), kept when they fit.
#include "zero/plan_advice.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>

#include "core/error.h"
#include "zero/step_time.h"

namespace tz {
namespace {

// A change of the settings: a switch (values empty), or a size tried from the largest value down.
struct Candidate {
  int cost;
  std::vector<std::size_t> values;
  std::function<bool(PlanInputs&, std::size_t value)> apply;  // false: not applicable to these inputs
  std::function<std::string(std::size_t value)> label;
};

bool fits(const PlanInputs& in, PlanChange* out) {
  try {
    const MemoryPlan p = plan_memory(in);
    for (Tier t : tiers()) out->total[t] = p.held(t);
    return p.fit_problem().empty();
  } catch (const Error&) {
    return false;  // a combination the planner refuses (e.g. parameter offload below stage 3)
  }
}

Candidate sized(const std::string& flag, std::size_t now, std::vector<std::size_t> values, int cost,
                std::function<void(PlanInputs&, std::size_t)> set) {
  std::erase_if(values, [&](std::size_t v) { return v >= now; });
  if (values.empty()) return {cost, {}, nullptr, nullptr};  // nothing smaller to try: dropped below
  return {cost, values, [set](PlanInputs& x, std::size_t v) { return set(x, v), true; },
          [flag](std::size_t v) { return flag + " " + count_text(v); }};
}

Candidate toggle(const std::string& label, int cost, std::function<bool(PlanInputs&)> apply) {
  return {cost, {}, [apply](PlanInputs& x, std::size_t) { return apply(x); }, [label](std::size_t) { return label; }};
}

std::vector<Candidate> candidates(const PlanInputs& in) {
  std::vector<Candidate> c;
  const ZeroOptions& z = in.zero;
  c.push_back(sized("--reduce-bucket-size", z.reduce_bucket_size,
                    {200'000'000, 100'000'000, 50'000'000, 20'000'000, 10'000'000, 5'000'000, 2'000'000, 1'000'000}, 0,
                    [](PlanInputs& x, std::size_t v) { x.zero.reduce_bucket_size = v; }));
  if (z.stage == 3)
    c.push_back(sized("--prefetch-bucket-size", z.prefetch_bucket_size,
                      {20'000'000, 10'000'000, 5'000'000, 2'000'000, 1'000'000, 0}, 0,
                      [](PlanInputs& x, std::size_t v) { x.zero.prefetch_bucket_size = v; }));
  std::vector<std::size_t> batches;
  for (int b = in.shape.B / 2; b >= 1; b /= 2)
    if (in.shape.B % b == 0) batches.push_back(std::size_t(b));
  const int B = in.shape.B;
  if (!batches.empty())
    c.push_back({1, batches, [](PlanInputs& x, std::size_t b) { return x.shape.B = int(b), true; },
               [B](std::size_t b) {
                 return "--micro-batch " + std::to_string(b) + " (with " + std::to_string(B / int(b)) +
                        "x --grad-accum: the same batch)";
               }});
  // The speculative CPU Adam's arena (host tier): the overlap costs step time, not memory elsewhere.
  c.push_back(toggle("--overlap-optimizer off", 1, [](PlanInputs& x) {
    if (x.offload.overlap_optimizer == OptimizerOverlap::off) return false;
    x.offload.overlap_optimizer = OptimizerOverlap::off;
    return true;
  }));
  c.push_back(toggle("--checkpoint-activations", 2, [](PlanInputs& x) {
    if (x.checkpointing != ActivationCheckpointing::off) return false;
    x.checkpointing = ActivationCheckpointing::per_block;
    return true;
  }));
  for (int s = z.stage + 1; s <= 3; ++s)
    c.push_back(toggle("--zero-stage " + std::to_string(s), 3, [s](PlanInputs& x) { return x.zero.stage = s, true; }));
  c.push_back(toggle("--offload-optimizer cpu", 4, [](PlanInputs& x) {
    if (!on_device(x.offload.optimizer)) return false;
    x.offload.optimizer = Tier::host;
    return true;
  }));
  const bool nvme = !in.offload.nvme_paths.empty();
  c.push_back(toggle(nvme ? "--offload-optimizer nvme" : "--offload-optimizer nvme --nvme-path DIR", 5, [](PlanInputs& x) {
    if (in_file(x.offload.optimizer)) return false;
    x.offload.optimizer = Tier::nvme;
    if (x.offload.nvme_paths.empty()) x.offload.nvme_paths = {"DIR"};
    return true;
  }));
  c.push_back(toggle(std::string(z.stage == 3 ? "" : "--zero-stage 3 ") + "--offload-param cpu", 5, [](PlanInputs& x) {
    if (!on_device(x.offload.param)) return false;
    x.zero.stage = 3;
    x.offload.param = Tier::host;
    return true;
  }));
  c.push_back(toggle("--checkpoint-activations --offload-activations cpu", 5, [](PlanInputs& x) {
    if (!on_device(x.offload.activations)) return false;
    x.checkpointing = ActivationCheckpointing::per_block;
    x.offload.activations = Tier::host;
    return true;
  }));
  std::vector<std::size_t> worlds;
  for (int w = in.world * 2; w <= in.world * 16; w *= 2) worlds.push_back(std::size_t(w));
  std::reverse(worlds.begin(), worlds.end());  // tried from the largest: keep the smallest that fits
  std::erase_if(c, [](const Candidate& x) { return !x.apply; });
  c.push_back({6, worlds, [](PlanInputs& x, std::size_t w) { return x.world = int(w), x.rank = 0, true; },
               [](std::size_t w) { return std::to_string(w) + " ranks (the same budgets per rank)"; }});
  return c;
}

// The least invasive value of a sized candidate (the largest size, or the fewest ranks) that fits on
// top of `base`; nothing when none does.
std::optional<PlanChange> try_candidate(const Candidate& c, const PlanInputs& base, const std::string& prefix) {
  const bool more_ranks = c.cost == 6;
  std::optional<PlanChange> best;
  const std::vector<std::size_t> values = c.values.empty() ? std::vector<std::size_t>{0} : c.values;
  for (std::size_t v : values) {
    PlanInputs x = base;
    if (!c.apply(x, v)) return best;
    PlanChange pc{prefix + c.label(v), c.cost, {}, 0, x};
    if (!fits(x, &pc)) {
      if (!more_ranks && best) return best;  // sizes only get smaller from here: the last fit was the largest
      continue;
    }
    best = pc;
    if (!more_ranks) return best;  // the largest size that fits
  }
  return best;
}

}  // namespace

std::string count_text(std::size_t n) {
  if (n < 1000) return std::to_string(n);
  int e = 0;
  std::size_t m = n;
  while (m % 10 == 0) m /= 10, ++e;
  if (m >= 100) return std::to_string(n);
  return std::to_string(m) + "e" + std::to_string(e);
}

std::vector<PlanChange> advise(const PlanInputs& in, std::size_t limit, const Hardware* hw, int grad_accum) {
  const std::vector<Candidate> cs = candidates(in);
  std::vector<PlanChange> out;
  for (const Candidate& c : cs)
    if (auto pc = try_candidate(c, in, "")) out.push_back(*pc);
  if (out.empty())  // no single change fits: pairs, the first change at its least invasive value that works
    for (std::size_t i = 0; i < cs.size(); ++i)
      for (std::size_t j = i + 1; j < cs.size(); ++j) {
        const std::vector<std::size_t> values = cs[i].values.empty() ? std::vector<std::size_t>{0} : cs[i].values;
        for (std::size_t v : values) {
          PlanInputs x = in;
          if (!cs[i].apply(x, v)) break;
          if (auto pc = try_candidate(cs[j], x, cs[i].label(v) + " and ")) {
            pc->cost += cs[i].cost;
            out.push_back(*pc);
            break;
          }
        }
      }
  std::stable_sort(out.begin(), out.end(), [](const PlanChange& a, const PlanChange& b) { return a.cost < b.cost; });
  if (out.size() > limit) out.resize(limit);
  if (hw)
    for (PlanChange& c : out) {
      // A smaller micro-batch keeps the batch with more accumulation.
      const int accum = grad_accum * std::max(1, in.shape.B / std::max(1, c.inputs.shape.B));
      try {
        c.step_s = predict_step(plan_memory(c.inputs), *hw, accum).step_s;
      } catch (const Error&) {
        c.step_s = 0;  // a rate the hardware lacks (NVMe, collectives): no prediction
      }
    }
  return out;
}

std::string advice_text(const MemoryPlan& plan, const Hardware* hw, int grad_accum) {
  const std::vector<PlanChange> changes = advise(plan.in, 6, hw, grad_accum);
  std::string s;
  if (changes.empty()) {
    s = "no single change or pair of changes tried makes it fit (smaller buckets or micro-batch, activation "
        "checkpointing, a higher stage, offloading, up to 16x the ranks): raise the budget of the tier named above";
    return s;
  }
  std::string names;
  for (Tier t : tiers()) names += (names.empty() ? "" : " / ") + tier_name(t);
  s = "smallest changes that fit (each re-planned; per rank: " + names +
      (hw ? "; predicted step on " + hw->name : "") + "):";
  for (const PlanChange& c : changes) {
    std::string line = "\n  " + c.flags;
    if (line.size() < 56) line.append(56 - line.size(), ' ');
    const char* sep = " ";
    for (Tier t : tiers()) line += sep + format_bytes(c.total[t]), sep = " / ";
    if (hw) {
      char t[48];
      std::snprintf(t, sizeof t, c.step_s > 0 ? "; %.1f ms" : "; (no rate)", c.step_s * 1e3);
      line += t;
    }
    s += line;
  }
  return s;
}

void check_fits_with_advice(const MemoryPlan& plan) {
  const std::string problem = plan.fit_problem();
  if (!problem.empty()) TZ_FAIL(problem, "\n", advice_text(plan), "\n");
}

}  // namespace tz
