// SpeculativeAdam: the worker thread, the saved copies and the validation helpers.
#include "zero/speculative_adam.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "core/error.h"
#include "core/numa.h"
#include "zero/group_adam.h"
#include "zero/numa_tier.h"

namespace tz {
namespace {

constexpr const char* kArena = "speculative optimizer: saved states";

std::size_t saved_bytes(const OptimizerPlan& p, int g) {
  return p.placement->groups[g].opt_range.count * (3 * sizeof(float) + dtype_size(p.dtype));
}

bool same(const AdamStep& a, const AdamStep& b) {
  return a.lr == b.lr && a.beta1 == b.beta1 && a.beta2 == b.beta2 && a.eps == b.eps &&
         a.weight_decay == b.weight_decay && a.step == b.step && a.grad_scale == b.grad_scale;
}

}  // namespace

bool SpeculativeAdam::enabled(const OptimizerPlan& p) {
  switch (p.overlap) {
    case OptimizerOverlap::on: return true;
    case OptimizerOverlap::off: return false;
    case OptimizerOverlap::automatic: break;
  }
  // Where the device's cores are the host's, the CPU Adam would compete with backward for them.
  return p.overlap_by_default;
}

namespace {

bool qualifies(const GroupPlacement& gp) {
  return in_host_memory(gp.update_on) && in_host_memory(gp.grad_home) && in_host_memory(gp.master_home) &&
         in_host_memory(gp.m_home) && in_host_memory(gp.v_home) && !in_file(gp.params_home) && gp.opt_range.count > 0;
}

}  // namespace

std::vector<bool> SpeculativeAdam::covered(const OptimizerPlan& p) {
  const auto& groups = p.placement->groups;
  std::vector<bool> c(groups.size(), false);
  if (!enabled(p)) return c;
  double total = 0;
  for (const GroupPlacement& gp : groups)
    if (qualifies(gp)) total += double(gp.opt_range.count);
  const double limit = p.overlap_share * total;
  double taken = 0;
  for (int g : p.backward_order) {  // the order backward hands the groups over
    const GroupPlacement& gp = groups[g];
    if (!qualifies(gp) || taken + double(gp.opt_range.count) > limit) continue;
    c[g] = true;
    taken += double(gp.opt_range.count);
  }
  return c;
}

std::vector<BufferSpec> SpeculativeAdam::buffers(const OptimizerPlan& p) {
  std::size_t bytes = 0;
  const std::vector<bool> c = covered(p);
  for (int g = 0; g < int(c.size()); ++g)
    if (c[g]) bytes += saved_bytes(p, g);
  if (!bytes) return {};
  return {{kArena, "speculative optimizer", MemoryKind::pinned_host, bytes}};
}

SpeculativeAdam::SpeculativeAdam(const OptimizerPlan& plan, std::vector<GroupState>& groups, PlannedBuffers& planned)
    : plan_(plan),
      groups_(groups),
      offset_(groups.size(), 0),
      covered_(covered(plan)),
      state_(groups.size(), State::idle),
      task_of_(groups.size()) {
  if (planned.has(kArena)) arena_ = planned.take<std::uint8_t>(kArena);
  std::size_t at = 0;
  for (int g = 0; g < int(groups.size()); ++g) {
    offset_[g] = at;
    if (covered_[g]) at += saved_bytes(plan, g);
  }
  TZ_CHECK(at == arena_.size(), "the speculative optimizer's arena has ", arena_.size(), " bytes; its groups need ", at);
  worker_ = std::thread([this] { run(); });
}

SpeculativeAdam::~SpeculativeAdam() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void SpeculativeAdam::start(int g, const AdamStep& adam, float wd) {
  if (!covered_[g] || state_[g] != State::idle) return;
  state_[g] = State::queued;
  task_of_[g] = {g, adam, wd};
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(task_of_[g]);
  }
  wake_.notify_one();
}

void SpeculativeAdam::finish() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return queue_.empty() && running_ == 0; });
  for (State& s : state_)
    if (s == State::queued) s = State::done;
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

void SpeculativeAdam::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    Task t = queue_.front();
    queue_.pop_front();
    ++running_;
    lock.unlock();
    try {
      update(t);
    } catch (...) {
      std::lock_guard<std::mutex> relock(mu_);
      if (!error_) error_ = std::current_exception();
    }
    lock.lock();
    --running_;
    if (queue_.empty() && running_ == 0) idle_.notify_all();
  }
}

float* SpeculativeAdam::saved(int g, int which) {
  const std::size_t n = groups_[g].place->opt_range.count;
  return reinterpret_cast<float*>(arena_.data() + offset_[g]) + std::size_t(which) * n;
}

std::uint8_t* SpeculativeAdam::saved_working(int g) {
  return arena_.data() + offset_[g] + groups_[g].place->opt_range.count * 3 * sizeof(float);
}

// The same pieces and calls as OptimizerStep::update_on_host, so the bits are the same.
void SpeculativeAdam::update(const Task& t) {
  GroupState& g = groups_[t.g];
  const GroupPlacement& gp = *g.place;
  const std::size_t count = gp.opt_range.count, es = dtype_size(g.working);
  std::memcpy(saved(t.g, 0), g.master_at(0), count * sizeof(float));
  std::memcpy(saved(t.g, 1), g.m.data(), count * sizeof(float));
  std::memcpy(saved(t.g, 2), g.v.data(), count * sizeof(float));
  const bool host_params = g.params.in_host_memory();
  if (host_params) std::memcpy(saved_working(t.g), g.params_at(gp.opt_range.offset), count * es);
  const int node = tier_numa_node(gp.master_home);  // a numa:N tier: on the node's nearest CPUs
  std::optional<OmpTeamOnCpus> near;
  if (node >= 0) near.emplace(nearest_cpus(node));
  for (std::size_t b = 0; b < count; b += plan_.update_chunk) {
    const std::size_t n = std::min(plan_.update_chunk, count - b), lo = gp.opt_range.offset + b;
    std::uint8_t* out = host_params ? g.params_at(lo) : saved_working(t.g) + b * es;
    group_adamw(*g.spec, lo, n, g.master_at(b), g.m.data() + b, g.v.data() + b, g.grad_at(b), out, g.working, t.adam,
                t.wd);
  }
}

bool SpeculativeAdam::done_with(int g, const AdamStep& adam, float wd) const {
  return state_[g] == State::done && same(task_of_[g].adam, adam) && task_of_[g].wd == wd;
}

void SpeculativeAdam::roll_back(int g) {
  TZ_CHECK(state_[g] == State::done, "group ", g, " has no finished speculative update to roll back");
  GroupState& s = groups_[g];
  const GroupPlacement& gp = *s.place;
  const std::size_t count = gp.opt_range.count;
  std::memcpy(s.master_at(0), saved(g, 0), count * sizeof(float));
  std::memcpy(s.m.data(), saved(g, 1), count * sizeof(float));
  std::memcpy(s.v.data(), saved(g, 2), count * sizeof(float));
  if (s.params.in_host_memory())
    std::memcpy(s.params_at(gp.opt_range.offset), saved_working(g), count * dtype_size(s.working));
  state_[g] = State::idle;
  ++rolled_back_;
}

const std::uint8_t* SpeculativeAdam::working_out(int g) {
  return groups_[g].params.on_device() ? saved_working(g) : nullptr;
}

void SpeculativeAdam::reset() { std::fill(state_.begin(), state_.end(), State::idle); }

}  // namespace tz
