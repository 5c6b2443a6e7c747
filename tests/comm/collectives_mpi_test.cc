// The MPI communicator at 1-4 ranks: every collective in fp32, bf16 and fp16 (and fp64 where the
// engine uses it) on inputs whose exact result is known (nccl-tests' verifiable style), NCCL's in-place
// conventions, progress without the caller, the statistics, and the deadline that fails a communicator.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/mpi_comm.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "tests/common/float_values.h"

namespace tz {
namespace {

// Per-rank counts: 1, odd, and not multiples of 8 or of any world size, so every slice edge is uneven.
const std::size_t kCounts[] = {1, 7, 1000, 4097};
// Elements after each output that no collective may touch.
constexpr std::size_t kGuard = 5;
constexpr float kSentinel = -1000.0f;  // exact in bf16 and fp16

// Inputs are small integers, so every partial sum is exact in bf16 and fp16 and the result does not
// depend on the order MPI adds in. Sum input of rank r at global index j: (r+1) * (j%7 - 3).
float sum_input(int r, std::size_t j) { return float(r + 1) * float(int(j % 7) - 3); }
float sum_result(int n, std::size_t j) { return float(n * (n + 1) / 2) * float(int(j % 7) - 3); }
// Max input: which rank holds the largest value changes with j; negative on most ranks.
float max_input(int r, int n, std::size_t j) {
  return float(int((std::size_t(r) + j) % std::size_t(n)) - 1) * float(j % 5 + 1);
}
float max_result(int n, std::size_t j) { return float(n - 2) * float(j % 5 + 1); }
// All-gather and broadcast input: names the rank and the index.
float tag_input(int r, std::size_t j) { return float(8 * r + int(j % 7)); }

std::unique_ptr<Communicator> world() {
  auto c = make_mpi_world();
  // A bug that desynchronises the ranks fails the test quickly instead of hanging until ctest's limit.
  c->set_timeout(std::chrono::seconds(20));
  return c;
}

template <typename T>
std::vector<T> filled(std::size_t n, float v) {
  return std::vector<T>(n, from_float<T>(v));
}

// got[offset + i] == want(i) for i < n, exactly; names the first mismatch.
template <typename T, typename F>
::testing::AssertionResult exact(const std::string& what, const std::vector<T>& got, std::size_t offset,
                                 std::size_t n, F want) {
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < n; ++i) {
    float g = to_float(got[offset + i]), w = want(i);
    if (!(g == w || (std::isnan(g) && std::isnan(w))) && bad++ == 0) first = i;
  }
  if (!bad) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": " << bad << " of " << n << " elements wrong; first at [" << first << "]: got "
         << to_float(got[offset + first]) << ", want " << want(first);
}

template <typename T>
::testing::AssertionResult guard_intact(const std::vector<T>& buf, std::size_t from) {
  return exact("guard after the output", buf, from, buf.size() - from, [](std::size_t) { return kSentinel; });
}

template <typename T>
class Collectives : public ::testing::Test {
 protected:
  static constexpr DType dt = dtype_of<T>();
  std::unique_ptr<Communicator> comm = world();
  int r = comm->rank(), n = comm->size();
};

using DTypes = ::testing::Types<float, bf16, fp16>;
class DTypeNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    return std::string(dtype_name(dtype_of<T>()));
  }
};
TYPED_TEST_SUITE(Collectives, DTypes, DTypeNames);

TYPED_TEST(Collectives, ReduceScatterOutOfPlaceSumsEachRanksSliceExactly) {
  const int r = this->r, n = this->n;
  for (std::size_t c : kCounts) {
    std::vector<TypeParam> send(c * n), recv = filled<TypeParam>(c + kGuard, kSentinel);
    for (std::size_t j = 0; j < send.size(); ++j) send[j] = from_float<TypeParam>(sum_input(r, j));
    const auto before = send;
    this->comm->reduce_scatter(send.data(), recv.data(), c, this->dt)->wait();
    EXPECT_TRUE(exact("reduce_scatter count " + std::to_string(c), recv, 0, c,
                      [&](std::size_t k) { return sum_result(n, r * c + k); }));
    EXPECT_TRUE(guard_intact(recv, c));
    EXPECT_TRUE(exact("send buffer unchanged", send, 0, send.size(),
                      [&](std::size_t j) { return to_float(before[j]); }));
  }
}

using test::from_f;
using test::to_f;

// In-place reduce-scatter by NCCL's convention (recv == send + rank * count), also in fp64: the
// sums are small integers, exact in every dtype.
template <typename T>
class InPlaceReduceScatter : public ::testing::Test {};
using InPlaceDTypes = ::testing::Types<float, bf16, fp16, double>;
TYPED_TEST_SUITE(InPlaceReduceScatter, InPlaceDTypes, DTypeNames);

TYPED_TEST(InPlaceReduceScatter, LeavesTheSumInThisRanksSliceOfTheBuffer) {
  auto comm = world();
  const int r = comm->rank(), n = comm->size();
  for (std::size_t c : kCounts) {
    std::vector<TypeParam> buf(c * n + kGuard, from_f<TypeParam>(kSentinel));
    for (std::size_t j = 0; j < c * n; ++j) buf[j] = from_f<TypeParam>(sum_input(r, j));
    comm->reduce_scatter(buf.data(), buf.data() + r * c, c, dtype_of<TypeParam>())->wait();
    std::size_t bad = 0, first = 0;
    for (std::size_t k = 0; k < c; ++k)
      if (to_f(buf[r * c + k]) != sum_result(n, r * c + k) && bad++ == 0) first = k;
    EXPECT_EQ(bad, 0u) << "count " << c << ": first wrong at slice element " << first << ": got "
                       << to_f(buf[r * c + first]) << ", want " << sum_result(n, r * c + first);
    for (std::size_t j = c * n; j < buf.size(); ++j) EXPECT_EQ(to_f(buf[j]), kSentinel) << "guard " << j;
  }
}

TYPED_TEST(Collectives, ReduceScatterMaxPicksTheLargestAcrossRanks) {
  const int r = this->r, n = this->n;
  for (std::size_t c : kCounts) {
    std::vector<TypeParam> send(c * n), recv = filled<TypeParam>(c + kGuard, kSentinel);
    for (std::size_t j = 0; j < send.size(); ++j) send[j] = from_float<TypeParam>(max_input(r, n, j));
    this->comm->reduce_scatter(send.data(), recv.data(), c, this->dt, ReduceOp::max)->wait();
    EXPECT_TRUE(exact("reduce_scatter max count " + std::to_string(c), recv, 0, c,
                      [&](std::size_t k) { return max_result(n, r * c + k); }));
    EXPECT_TRUE(guard_intact(recv, c));
  }
}

TYPED_TEST(Collectives, AllGatherOutOfPlacePutsRankQsInputInSliceQ) {
  const int r = this->r, n = this->n;
  for (std::size_t c : kCounts) {
    std::vector<TypeParam> send(c), recv = filled<TypeParam>(c * n + kGuard, kSentinel);
    for (std::size_t k = 0; k < c; ++k) send[k] = from_float<TypeParam>(tag_input(r, k));
    this->comm->all_gather(send.data(), recv.data(), c, this->dt)->wait();
    EXPECT_TRUE(exact("all_gather count " + std::to_string(c), recv, 0, c * n,
                      [&](std::size_t j) { return tag_input(int(j / c), j % c); }));
    EXPECT_TRUE(guard_intact(recv, c * n));
  }
}

TYPED_TEST(Collectives, AllGatherInPlaceFromThisRanksSlice) {
  const int r = this->r, n = this->n;
  for (std::size_t c : kCounts) {
    std::vector<TypeParam> buf = filled<TypeParam>(c * n + kGuard, kSentinel);
    for (std::size_t k = 0; k < c; ++k) buf[r * c + k] = from_float<TypeParam>(tag_input(r, k));
    this->comm->all_gather(buf.data() + r * c, buf.data(), c, this->dt)->wait();
    EXPECT_TRUE(exact("in-place all_gather count " + std::to_string(c), buf, 0, c * n,
                      [&](std::size_t j) { return tag_input(int(j / c), j % c); }));
    EXPECT_TRUE(guard_intact(buf, c * n));
  }
}

TYPED_TEST(Collectives, AllReduceSumIsExactOnEveryRank) {
  const int r = this->r, n = this->n;
  for (std::size_t c : kCounts) {
    std::vector<TypeParam> buf = filled<TypeParam>(c + kGuard, kSentinel);
    for (std::size_t j = 0; j < c; ++j) buf[j] = from_float<TypeParam>(sum_input(r, j));
    this->comm->all_reduce(buf.data(), c, this->dt)->wait();
    EXPECT_TRUE(exact("all_reduce sum count " + std::to_string(c), buf, 0, c,
                      [&](std::size_t j) { return sum_result(n, j); }));
    EXPECT_TRUE(guard_intact(buf, c));
  }
}

TYPED_TEST(Collectives, AllReduceMaxIsExactOnEveryRank) {
  const int r = this->r, n = this->n;
  for (std::size_t c : kCounts) {
    std::vector<TypeParam> buf = filled<TypeParam>(c + kGuard, kSentinel);
    for (std::size_t j = 0; j < c; ++j) buf[j] = from_float<TypeParam>(max_input(r, n, j));
    this->comm->all_reduce(buf.data(), c, this->dt, ReduceOp::max)->wait();
    EXPECT_TRUE(exact("all_reduce max count " + std::to_string(c), buf, 0, c,
                      [&](std::size_t j) { return max_result(n, j); }));
    EXPECT_TRUE(guard_intact(buf, c));
  }
}

TYPED_TEST(Collectives, AllReduceMaxIsNaNWhereAnyRankHasNaN) {
  const int r = this->r, n = this->n;
  const std::size_t c = 7;
  std::vector<TypeParam> buf(c);
  for (std::size_t j = 0; j < c; ++j) buf[j] = from_float<TypeParam>(max_input(r, n, j));
  // The NaN sits on the rank holding the smallest value at index 3 (max_input's (r+3)%n == 0), so a
  // max that dropped NaNs, or let the larger operand win, would show a number there.
  const int nan_rank = (n - 3 % n) % n;
  if (r == nan_rank) buf[3] = from_float<TypeParam>(std::numeric_limits<float>::quiet_NaN());
  this->comm->all_reduce(buf.data(), c, this->dt, ReduceOp::max)->wait();
  EXPECT_TRUE(exact("all_reduce max with a NaN", buf, 0, c, [&](std::size_t j) {
    return j == 3 ? std::numeric_limits<float>::quiet_NaN() : max_result(n, j);
  }));
}

TYPED_TEST(Collectives, BroadcastFromEachRootReachesEveryRank) {
  const int r = this->r, n = this->n;
  for (int root = 0; root < n; ++root) {
    for (std::size_t c : kCounts) {
      std::vector<TypeParam> buf = filled<TypeParam>(c + kGuard, kSentinel);
      for (std::size_t k = 0; k < c; ++k)
        buf[k] = from_float<TypeParam>(r == root ? tag_input(root, k) : -1.0f);
      this->comm->broadcast(buf.data(), c, this->dt, root)->wait();
      EXPECT_TRUE(exact("broadcast from root " + std::to_string(root) + " count " + std::to_string(c), buf, 0,
                        c, [&](std::size_t k) { return tag_input(root, k); }));
      EXPECT_TRUE(guard_intact(buf, c));
    }
  }
}

TYPED_TEST(Collectives, SeveralInFlightCompleteWhenWaitedInReverseOrder) {
  const int r = this->r, n = this->n;
  const DType dt = this->dt;
  const std::size_t c = 1000;
  std::vector<TypeParam> ar(c), rs_send(c * n), rs_recv(7), ag = filled<TypeParam>(4097 * n, kSentinel),
                                                            bc(c);
  std::vector<float> mx(7);
  for (std::size_t j = 0; j < c; ++j) ar[j] = from_float<TypeParam>(sum_input(r, j));
  for (std::size_t j = 0; j < 7 * std::size_t(n); ++j) rs_send[j] = from_float<TypeParam>(sum_input(r, j));
  for (std::size_t k = 0; k < 4097; ++k) ag[r * 4097 + k] = from_float<TypeParam>(tag_input(r, k));
  for (std::size_t k = 0; k < c; ++k) bc[k] = from_float<TypeParam>(r == n - 1 ? tag_input(n - 1, k) : 0.0f);
  for (std::size_t j = 0; j < 7; ++j) mx[j] = max_input(r, n, j);

  auto& comm = *this->comm;
  std::vector<std::unique_ptr<Work>> works;
  works.push_back(comm.all_reduce(ar.data(), c, dt));
  works.push_back(comm.reduce_scatter(rs_send.data(), rs_recv.data(), 7, dt));
  works.push_back(comm.all_gather(ag.data() + r * 4097, ag.data(), 4097, dt));
  works.push_back(comm.broadcast(bc.data(), c, dt, n - 1));
  works.push_back(comm.all_reduce(mx.data(), 7, DType::f32, ReduceOp::max));
  works.push_back(comm.barrier());
  for (auto it = works.rbegin(); it != works.rend(); ++it) (*it)->wait();

  EXPECT_TRUE(exact("all_reduce", ar, 0, c, [&](std::size_t j) { return sum_result(n, j); }));
  EXPECT_TRUE(
      exact("reduce_scatter", rs_recv, 0, 7, [&](std::size_t k) { return sum_result(n, r * 7 + k); }));
  EXPECT_TRUE(exact("all_gather", ag, 0, 4097 * n,
                    [&](std::size_t j) { return tag_input(int(j / 4097), j % 4097); }));
  EXPECT_TRUE(exact("broadcast", bc, 0, c, [&](std::size_t k) { return tag_input(n - 1, k); }));
  EXPECT_TRUE(exact("fp32 max", mx, 0, 7, [&](std::size_t j) { return max_result(n, j); }));
}

TYPED_TEST(Collectives, StatsCountElementsAndBytesByTheBusBandwidthConvention) {
  const int r = this->r, n = this->n;
  const DType dt = this->dt;
  const std::size_t c = 1000, es = sizeof(TypeParam);
  std::vector<TypeParam> big(c * n), small(c);
  auto& comm = *this->comm;
  comm.reduce_scatter(big.data(), small.data(), c, dt)->wait();
  comm.all_gather(small.data(), big.data(), c, dt)->wait();
  comm.all_reduce(small.data(), c, dt)->wait();
  comm.all_reduce(small.data(), c, dt, ReduceOp::max)->wait();
  comm.broadcast(small.data(), c, dt, 0)->wait();
  comm.barrier()->wait();

  const CommStats s = comm.stats();
  auto idx = [](Collective k) { return int(k); };
  // A message of M elements: reduce-scatter and all-gather send (N-1)/N x M per rank (M = N x c),
  // all-reduce 2(N-1)/N x M (M = c, twice: sum and max), broadcast M from the root only.
  const double rs = double(n - 1) * c, ag = double(n - 1) * c, ar = 2 * (2.0 * (n - 1) / n * c);
  const double bc = r == 0 && n > 1 ? double(c) : 0.0;
  EXPECT_EQ(s.calls[idx(Collective::reduce_scatter)], 1);
  EXPECT_EQ(s.calls[idx(Collective::all_gather)], 1);
  EXPECT_EQ(s.calls[idx(Collective::all_reduce)], 2);
  EXPECT_EQ(s.calls[idx(Collective::broadcast)], 1);
  EXPECT_EQ(s.calls[idx(Collective::barrier)], 1);
  EXPECT_DOUBLE_EQ(s.elements_sent[idx(Collective::reduce_scatter)], rs);
  EXPECT_DOUBLE_EQ(s.elements_sent[idx(Collective::all_gather)], ag);
  EXPECT_DOUBLE_EQ(s.elements_sent[idx(Collective::all_reduce)], ar);
  EXPECT_DOUBLE_EQ(s.elements_sent[idx(Collective::broadcast)], bc);
  EXPECT_DOUBLE_EQ(s.elements_sent[idx(Collective::barrier)], 0.0);
  EXPECT_DOUBLE_EQ(s.bytes_sent[idx(Collective::reduce_scatter)], rs * es);
  EXPECT_DOUBLE_EQ(s.bytes_sent[idx(Collective::all_gather)], ag * es);
  EXPECT_DOUBLE_EQ(s.bytes_sent[idx(Collective::all_reduce)], ar * es);
  EXPECT_DOUBLE_EQ(s.bytes_sent[idx(Collective::broadcast)], bc * es);
  EXPECT_DOUBLE_EQ(s.bytes_sent[idx(Collective::barrier)], 0.0);
  for (int k = 0; k < kNumCollectives; ++k) {
    // Every collective took some time from call to completion; whether the host blocked for it depends
    // on whether it was done before wait() was reached.
    EXPECT_GT(s.busy_seconds[k], 0.0) << collective_name(Collective(k));
    EXPECT_LT(s.busy_seconds[k], 10.0) << collective_name(Collective(k));
    EXPECT_GE(s.wait_seconds[k], 0.0) << collective_name(Collective(k));
    EXPECT_LT(s.wait_seconds[k], 10.0) << collective_name(Collective(k));
  }
  comm.reset_stats();
  EXPECT_EQ(comm.stats().calls[idx(Collective::all_reduce)], 0);
  EXPECT_EQ(comm.stats().wait_seconds[idx(Collective::all_reduce)], 0.0);
  EXPECT_EQ(comm.stats().busy_seconds[idx(Collective::all_reduce)], 0.0);
}

TEST(MpiCommunicator, NamesTheGroupAndMatchesMpisRankAndSize) {
  auto comm = world();
  int rank = -1, size = -1;
  // Direct MPI calls are allowed here: nothing is in flight on any communicator.
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT_EQ(comm->rank(), rank);
  EXPECT_EQ(comm->size(), size);
  EXPECT_EQ(comm->name(), "MPI_COMM_WORLD (" + std::to_string(size) + " ranks)");
  EXPECT_EQ(collective_name(Collective::reduce_scatter), "reduce_scatter");
  EXPECT_EQ(collective_name(Collective::all_reduce), "all_reduce");
}

TEST(MpiCommunicator, BarrierWaitsForTheLastRankToJoin) {
  auto comm = world();
  comm->barrier()->wait();  // start together
  const auto t0 = std::chrono::steady_clock::now();
  if (comm->rank() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  comm->barrier()->wait();
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (comm->rank() == 0 && comm->size() > 1) {
    EXPECT_GE(waited, 0.2) << "rank 0 left the barrier before the sleeping ranks joined";
    EXPECT_GE(comm->stats().wait_seconds[int(Collective::barrier)], 0.2);
  }
}

TEST(MpiCommunicator, ACollectiveCompletesWhileTheCallerOnlySleeps) {
  // The progress thread advances it: the caller makes no comm call but done() until it is over.
  auto comm = world();
  const int n = comm->size();
  std::vector<float> buf(4097, float(comm->rank() + 1));
  auto w = comm->all_reduce(buf.data(), buf.size(), DType::f32);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!w->done()) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the all_reduce made no progress without wait()";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(exact("all_reduce done without wait", buf, 0, buf.size(),
                    [&](std::size_t) { return float(n * (n + 1) / 2); }));
  EXPECT_EQ(comm->stats().wait_seconds[int(Collective::all_reduce)], 0.0) << "nothing blocked in wait()";
  w->wait();  // already complete: returns at once
  comm->all_reduce(nullptr, 0, DType::bf16)->wait();
  comm->all_gather(nullptr, nullptr, 0, DType::f16)->wait();
  comm->reduce_scatter(nullptr, nullptr, 0, DType::f32)->wait();
}

TEST(MpiCommunicator, WaitOnACpuStreamCompletesTheCollective) {
  auto comm = world();
  const int n = comm->size();
  auto device = make_cpu_device();
  auto stream = device->create_stream();
  std::vector<float> buf(1000, float(comm->rank() + 1));
  auto w = comm->all_reduce(buf.data(), buf.size(), DType::f32);
  w->wait(*stream);  // the CPU stream's next operation runs on this thread: it must see the result
  EXPECT_TRUE(w->done());
  EXPECT_TRUE(exact("all_reduce after wait(stream)", buf, 0, buf.size(),
                    [&](std::size_t) { return float(n * (n + 1) / 2); }));
}

TEST(MpiCommunicator, BusyTimeRunsFromCallToCompletionAndCoversTheWait) {
  auto comm = world();
  const int r = comm->rank(), n = comm->size();
  comm->barrier()->wait();
  comm->reset_stats();
  // Rank 0 calls first and the others 100 ms later; every rank computes (sleeps) 20 ms between its
  // call and its wait, so rank 0 blocks ~80 ms of the ~100 ms its barrier is busy.
  if (r != 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto w = comm->barrier();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  w->wait();
  const CommStats s = comm->stats();
  const double busy = s.busy_seconds[int(Collective::barrier)],
               wait = s.wait_seconds[int(Collective::barrier)];
  EXPECT_GT(busy, 0.0);
  EXPECT_GE(busy, wait) << "the host cannot block on a collective longer than it is in flight";
  if (r == 0 && n > 1) {
    EXPECT_GE(busy, 0.09) << "busy time counts from the call, not from the wait";
    EXPECT_GE(wait, 0.05);
    EXPECT_LE(wait, busy - 0.01) << "the 20 ms computed after the call are hidden, not waited";
  }
}

TEST(MpiCommunicator, AScalarFp64AllReduceIsExactAndItsMaxSpreadsANaN) {
  // How the engine reduces the loss and the gradient norm: one fp64 element, in place.
  auto comm = world();
  const int r = comm->rank(), n = comm->size();
  // 2^-40 steps survive only in fp64 (an fp32 path would round them away near 1..4).
  const double step = std::ldexp(1.0, -40);
  double loss = 1.0 + step * (r + 1);
  comm->all_reduce(&loss, 1, DType::f64)->wait();
  EXPECT_EQ(loss, double(n) + step * (n * (n + 1) / 2));
  double norm = 1.0 + step * r;
  comm->all_reduce(&norm, 1, DType::f64, ReduceOp::max)->wait();
  EXPECT_EQ(norm, 1.0 + step * (n - 1));
  for (int nan_rank : {0, n - 1}) {
    double x = r == nan_rank ? std::numeric_limits<double>::quiet_NaN() : 1e300 * (r + 1);
    comm->all_reduce(&x, 1, DType::f64, ReduceOp::max)->wait();
    EXPECT_TRUE(std::isnan(x)) << "NaN on rank " << nan_rank << " did not reach rank " << r << ": " << x;
  }
}

TEST(MpiCommunicator, DestroyingAnUnfinishedWorkWaitsForIt) {
  auto comm = world();
  std::vector<float> buf(4097, 1.0f);
  comm->all_reduce(buf.data(), buf.size(), DType::f32).reset();  // never waited
  EXPECT_EQ(buf[0], float(comm->size()));
  EXPECT_EQ(buf[4096], float(comm->size()));
}

TEST(MpiCommunicator, RejectsABadRootAndOverlappingBuffersBeforeStarting) {
  // Every rank fails the same check before anything is queued, so no rank is left inside a collective.
  auto comm = world();
  const int r = comm->rank(), n = comm->size();
  std::vector<float> buf(8 * n + 8);
  EXPECT_THROW(comm->broadcast(buf.data(), 4, DType::f32, n), Error);
  EXPECT_THROW(comm->broadcast(buf.data(), 4, DType::f32, -1), Error);
  // recv overlaps send one element past this rank's slice: neither separate nor in place.
  EXPECT_THROW(comm->reduce_scatter(buf.data(), buf.data() + 4 * r + 1, 4, DType::f32), Error);
  if (n > 1) {
    EXPECT_THROW(comm->all_gather(buf.data() + 4 * r + 1, buf.data(), 4, DType::f32), Error);
  }
  EXPECT_EQ(comm->stats().calls[int(Collective::broadcast)], 0);
  EXPECT_EQ(comm->stats().calls[int(Collective::reduce_scatter)], 0);
  comm->barrier()->wait();  // and the ranks are still in step
}

TEST(MpiCommunicator, AMissedDeadlineFailsEveryWorkAndLaterCallWithOneMessage) {
  auto comm = world();
  const int n = comm->size();
  if (n < 2) GTEST_SKIP() << "needs a rank that does not join";
  comm->barrier()->wait();  // collective #1
  if (comm->rank() == 0) {
    comm->set_timeout(std::chrono::milliseconds(300));
    // Rank 0 alone joins two broadcasts from rank 1, which never sends them. A non-root only posts
    // receives, so nothing rank 0 sends can be matched by a later communicator. MPI may still write
    // the buffers after the failure: they outlive the test.
    static double never[2][4];
    const auto t0 = std::chrono::steady_clock::now();
    auto first = comm->broadcast(never[0], 4, DType::f64, 1);   // #2
    auto second = comm->broadcast(never[1], 4, DType::f64, 1);  // #3
    std::string message;
    try {
      second->wait();
      ADD_FAILURE() << "a broadcast nobody sent completed";
    } catch (const Error& e) {
      message = e.what();
    }
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // One deadline for the stuck job, not one per collective in flight.
    EXPECT_GE(waited, 0.29);
    EXPECT_LT(waited, 1.5);
    const std::string group = "MPI_COMM_WORLD (" + std::to_string(n) + " ranks)";
    EXPECT_NE(message.find("broadcast #2 of 4 fp64 elements from root 1 on " + group + " has not completed"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("with 1 other collective in flight"), std::string::npos) << message;
    EXPECT_TRUE(first->done());
    EXPECT_TRUE(second->done());
    try {
      first->wait();
      ADD_FAILURE() << "the oldest collective completed";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), message) << "every wait throws the one message";
    }
    try {
      comm->barrier();
      ADD_FAILURE() << "a failed communicator started a collective";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
    // The error was handed over, so the watchdog does not end the job once its grace period (300 ms)
    // is over; and destroying the failed Works and communicator says nothing more.
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    ::testing::internal::CaptureStderr();
    first.reset();
    second.reset();
    comm.reset();
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  }
  world()->barrier()->wait();  // every rank is still in step on a new communicator
}

TEST(SelfComm, InPlaceIsANoOpAndOverlapIsRefused) {
  auto self = make_self_comm();
  std::vector<float> buf = {1, 2, 3, 4};
  self->reduce_scatter(buf.data(), buf.data(), 4, DType::f32)->wait();  // in place for rank 0
  self->all_gather(buf.data(), buf.data(), 4, DType::f32)->wait();
  EXPECT_EQ(buf, (std::vector<float>{1, 2, 3, 4}));
  std::vector<float> out(2);
  auto w = self->reduce_scatter(buf.data() + 1, out.data(), 2, DType::f32);
  EXPECT_TRUE(w->done());
  EXPECT_EQ(out, (std::vector<float>{2, 3}));
  EXPECT_THROW(self->reduce_scatter(buf.data(), buf.data() + 1, 2, DType::f32), Error);
  EXPECT_EQ(self->stats().calls[int(Collective::reduce_scatter)], 2);
}

}  // namespace
}  // namespace tz
