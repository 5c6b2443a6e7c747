// The engine's use of collective groups (Communicator::group_start/group_end), checked on the MPI
// backend through a communicator that forwards every call and records how groups are used. NCCL launches
// a group's collectives only at its end, so a Work waited on inside its own group would throw there: the
// CPU cannot run NCCL, but it can prove that the engine never does that, that the all-gathers after the
// step go in buckets of groups, that stage 3's gathers are grouped, and that the losses are bitwise those
// of the same run without the checking layer.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "tests/common/stream.h"
#include "train/trainer.h"

namespace tz {
namespace {

void quiet(const std::string&) {}

// Forwards to `inner`; records each group (its collectives by kind) and every misuse.
class GroupCheckingComm final : public Communicator {
 public:
  explicit GroupCheckingComm(Communicator& inner) : inner_(inner) {}

  struct Group {
    std::vector<Collective> kinds;
  };
  std::vector<Group> groups;             // every group ended, in order
  std::vector<std::string> violations;   // misuse, described
  int ungrouped_all_gathers = 0;

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string name() const override { return "checking " + inner_.name(); }

  std::unique_ptr<Work> reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype,
                                       ReduceOp op) override {
    return wrap(Collective::reduce_scatter, inner_.reduce_scatter(send, recv, count, dtype, op));
  }
  std::unique_ptr<Work> all_gather(const void* send, void* recv, std::size_t count, DType dtype) override {
    if (!open_) ++ungrouped_all_gathers;
    return wrap(Collective::all_gather, inner_.all_gather(send, recv, count, dtype));
  }
  std::unique_ptr<Work> all_reduce(void* buf, std::size_t count, DType dtype, ReduceOp op) override {
    return wrap(Collective::all_reduce, inner_.all_reduce(buf, count, dtype, op));
  }
  std::unique_ptr<Work> broadcast(void* buf, std::size_t count, DType dtype, int root) override {
    return wrap(Collective::broadcast, inner_.broadcast(buf, count, dtype, root));
  }
  std::unique_ptr<Work> barrier() override { return wrap(Collective::barrier, inner_.barrier()); }
  void abort(int code) noexcept override { inner_.abort(code); }
  void set_producer_stream(Stream* s) override { inner_.set_producer_stream(s); }
  bool follows_producer_stream() const override { return inner_.follows_producer_stream(); }

  void group_start() override {
    if (open_) violations.push_back("a group started inside another");
    open_ = true;
    current_ = Group{};
    ++group_id_;
    inner_.group_start();
  }
  void group_end() override {
    if (!open_) violations.push_back("group_end without group_start");
    open_ = false;
    if (!current_.kinds.empty()) groups.push_back(current_);
    inner_.group_end();
  }

 private:
  class CheckedWork final : public Work {
   public:
    CheckedWork(GroupCheckingComm& c, std::unique_ptr<Work> w, int group) : c_(c), w_(std::move(w)), group_(group) {}
    bool done() override { return w_->done(); }
    void wait() override {
      check();
      w_->wait();
    }
    void wait(Stream& s) override {
      check();
      w_->wait(s);
    }

   private:
    void check() {
      if (group_ > 0 && c_.open_ && c_.group_id_ == group_)
        c_.violations.push_back("a collective was waited on inside its own group " + std::to_string(group_));
    }
    GroupCheckingComm& c_;
    std::unique_ptr<Work> w_;
    int group_;
  };

  std::unique_ptr<Work> wrap(Collective k, std::unique_ptr<Work> w) {
    if (open_) current_.kinds.push_back(k);
    return std::make_unique<CheckedWork>(*this, std::move(w), open_ ? group_id_ : 0);
  }

  Communicator& inner_;
  bool open_ = false;
  int group_id_ = 0;
  Group current_;
};

TrainOptions tiny(int stage) {
  TrainOptions o;
  o.model = model_preset("tiny");
  o.steps = 4;
  o.lr.lr = 1e-3f;
  o.log_every = 0;
  o.val_batches = 1;
  o.dtype = DType::bf16;
  o.zero.stage = stage;
  o.zero.reduce_bucket_size = 40'000;
  o.zero.allgather_bucket_size = 60'000;  // 3 buckets of after-step all-gathers, the last of 2 groups
  o.zero.prefetch_bucket_size = 60'000;   // stage 3 prefetches a group or two ahead
  o.zero.param_persistence_threshold = 0;
  return o;
}

TEST(CollectiveGroups, TheEngineNeverWaitsInsideAGroupAndTheLossesAreUnchanged) {
  std::unique_ptr<Communicator> world = make_mpi_world();
  const int N = world->size();
  for (int stage : {1, 2, 3}) {
    const TrainResult plain = train(tiny(stage), *world, quiet);
    GroupCheckingComm checking(*world);
    const TrainResult checked = train(tiny(stage), checking, quiet);
    for (const std::string& v : checking.violations) ADD_FAILURE() << "stage " << stage << ": " << v;
    ASSERT_EQ(plain.losses.size(), checked.losses.size());
    for (std::size_t s = 0; s < plain.losses.size(); ++s)
      EXPECT_EQ(plain.losses[s], checked.losses[s]) << "stage " << stage << " step " << s + 1;
    // Every group holds all-gathers only (parameter gathers, or the all-gathers after the step).
    for (const auto& g : checking.groups)
      for (Collective k : g.kinds) EXPECT_EQ(k, Collective::all_gather) << "stage " << stage;
    if (N == 1 && stage < 3) {
      EXPECT_TRUE(checking.groups.empty()) << "a world of one regathers nothing at stage " << stage;
      continue;
    }
    // Stage 1-2: each step regathers every group in buckets of 40,000 elements, several per step.
    // Stage 3: each acquire's gathers (its group and the prefetches) are one group; nothing outside one.
    EXPECT_GT(checking.groups.size(), std::size_t(2 * tiny(stage).steps)) << "stage " << stage;
    std::size_t largest = 0;
    for (const auto& g : checking.groups) largest = std::max(largest, g.kinds.size());
    EXPECT_GE(largest, 2u) << "stage " << stage << ": no group held more than one collective";
    // Outside groups: the checkpoint-free run's only other all-gathers are the settings agreement's (at
    // most 4), the ranks' host names at the start (2: lengths, then the names) and the one small gather of
    // every rank's figures after each step (train/rank_stats.h).
    if (stage == 3)
      EXPECT_LE(checking.ungrouped_all_gathers, 4 + 2 + tiny(stage).steps) << "stage 3 gathers outside a group";
  }
}

}  // namespace
}  // namespace tz
