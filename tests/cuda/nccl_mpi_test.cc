// Tests comm/nccl_comm.h at 1 and 2 ranks, one GPU each: every collective in fp32, bf16 and fp64 on small
// integers (exact in every dtype, so the result does not depend on NCCL's order of additions), in place
// and out of place, counts 1, 1000 and 2^20 + 3; the producer stream; statistics; argument checks; and
// the deadline that aborts the communicator. Skips, on every rank, when a rank has fewer GPUs than
// there are ranks on its node.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/nccl_comm.h"
#include "comm/world.h"
#include "core/cuda/cuda_device.h"
#include "core/cuda/cuda_runtime.h"
#include "core/cuda/cuda_stream.h"
#include "core/dtype.h"
#include "core/error.h"
#include "tests/common/float_values.h"
#include "tests/cuda/kernel_test_util.h"

namespace tz {
namespace {

const std::size_t kCounts[] = {1, 1000, (std::size_t(1) << 20) + 3};
constexpr std::size_t kGuard = 5;      // elements after each output that no collective may touch
constexpr float kSentinel = -1000.0f;  // exact in bf16

// Sum input of rank r at global index j, and the sum over n ranks (at most 3 * n(n+1)/2 in magnitude:
// exact in bf16 for any world these tests run in).
float sum_input(int r, std::size_t j) { return float(r + 1) * float(int(j % 7) - 3); }
float sum_result(int n, std::size_t j) { return float(n * (n + 1) / 2) * float(int(j % 7) - 3); }
// Max input: which rank holds the largest value changes with j.
float max_input(int r, int n, std::size_t j) {
  return float(int((std::size_t(r) + j) % std::size_t(n)) - 1) * float(j % 5 + 1);
}
float max_result(int n, std::size_t j) { return float(n - 2) * float(j % 5 + 1); }
// All-gather and broadcast input: names the rank and the index.
float tag_input(int r, std::size_t j) { return float(8 * r + int(j % 7)); }

using test::from_f;
using test::to_f;

// got[offset + i] == want(i) for i < n, exactly; names the first mismatch and how many there are.
template <typename T, typename F>
::testing::AssertionResult exact(const std::string& what, const std::vector<T>& got, std::size_t offset,
                                 std::size_t n, F want) {
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (to_f(got[offset + i]) != want(i) && bad++ == 0) first = i;
  if (!bad) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": " << bad << " of " << n << " elements wrong; first at [" << first << "]: got "
         << to_f(got[offset + first]) << ", want " << want(first);
}

template <typename T>
::testing::AssertionResult guard_intact(const std::string& what, const std::vector<T>& buf,
                                        std::size_t from) {
  return exact(what + " (guard after the output)", buf, from, buf.size() - from,
               [](std::size_t) { return kSentinel; });
}

// test::DeviceArray bound to `stream` (the communicator's), so copies and collectives are ordered by the
// stream alone.
template <typename T>
class DeviceArray : public test::DeviceArray<T> {
 public:
  DeviceArray(std::size_t n, cudaStream_t s) : test::DeviceArray<T>(n), s_(s) {}
  void upload(const std::vector<T>& host) {
    TZ_CHECK(host.size() == this->size(), "upload of ", host.size(), " elements into ", this->size());
    test::DeviceArray<T>::upload(host, s_);
    TZ_CUDA_CHECK(cudaStreamSynchronize(s_));  // the host vector may go away next
  }
  std::vector<T> download() { return test::DeviceArray<T>::download(s_); }

 private:
  cudaStream_t s_;
};

template <typename T, typename F>
std::vector<T> make(std::size_t n, F value) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = from_f<T>(value(i));
  return v;
}

// Why this job cannot run the tests, agreed by every rank ("" when it can): each rank needs a GPU of
// its own on its node.
std::string skip_reason(Communicator& mpi) {
  const int gpus = cuda::device_count();
  const WorldInfo w = discover_world();
  std::string mine;
  if (gpus == 0)
    mine = cuda::unavailable_reason();
  else if (gpus < w.local_size)
    mine = detail::concat(gpus, " GPU(s) for ", w.local_size, " ranks on ", w.host);
  std::int32_t bad = mine.empty() ? 0 : 1;
  mpi.all_reduce(&bad, 1, DType::i32, ReduceOp::max)->wait();
  if (bad == 0) return "";
  return mine.empty() ? "another rank has fewer GPUs than ranks on its node" : mine;
}

class Nccl : public ::testing::Test {
 protected:
  void SetUp() override {
    mpi_ = make_host_world(discover_world());  // one rank without mpirun: the unique id is made here
    mpi_->set_timeout(std::chrono::seconds(60));
    const std::string why = skip_reason(*mpi_);
    if (!why.empty()) GTEST_SKIP() << why;
    DeviceOptions o;
    o.gpu = local_gpu(discover_world(), cuda::device_count());
    dev_ = cuda::make_cuda_device(o);
    device_used_before_comm_ = dev_->budget(MemoryKind::device).used();
    comm_ = std::make_unique<NcclCommunicator>(*mpi_, cuda::cuda_device_index(*dev_),
                                               dev_->allocator(MemoryKind::device));
    // A bug that desynchronises the ranks fails the test instead of hanging until ctest's limit.
    comm_->set_timeout(std::chrono::seconds(30));
    r_ = comm_->rank();
    n_ = comm_->size();
    s_ = comm_->stream().get();
  }

  template <typename T>
  void reduce_scatter_exact();
  template <typename T>
  void all_gather_exact();
  template <typename T>
  void all_reduce_exact();
  template <typename T>
  void broadcast_exact();

  std::unique_ptr<Communicator> mpi_;
  std::unique_ptr<Device> dev_;             // the GPU's device: the barrier buffer is under its budget
  std::size_t device_used_before_comm_ = 0;
  std::unique_ptr<NcclCommunicator> comm_;  // destroyed before dev_ and mpi_, its bootstrap
  int r_ = 0, n_ = 1;
  cudaStream_t s_ = nullptr;
};

template <typename T>
void Nccl::reduce_scatter_exact() {
  const DType dt = dtype_of<T>();
  const int r = r_, n = n_;
  for (std::size_t c : kCounts) {
    const std::string at = detail::concat(dtype_name(dt), " count ", c);
    DeviceArray<T> send(c * n, s_), recv(c + kGuard, s_);
    send.upload(make<T>(c * n, [&](std::size_t j) { return sum_input(r, j); }));
    recv.upload(make<T>(c + kGuard, [](std::size_t) { return kSentinel; }));
    comm_->reduce_scatter(send.data(), recv.data(), c, dt)->wait();
    const std::vector<T> got = recv.download();
    EXPECT_TRUE(
        exact("reduce_scatter " + at, got, 0, c, [&](std::size_t k) { return sum_result(n, r * c + k); }));
    EXPECT_TRUE(guard_intact("reduce_scatter " + at, got, c));
    EXPECT_TRUE(exact("reduce_scatter's send " + at, send.download(), 0, c * n,
                      [&](std::size_t j) { return sum_input(r, j); }));

    // In place by NCCL's convention: recv == send + rank * count.
    DeviceArray<T> buf(c * n + kGuard, s_);
    buf.upload(
        make<T>(c * n + kGuard, [&](std::size_t j) { return j < c * n ? sum_input(r, j) : kSentinel; }));
    comm_->reduce_scatter(buf.data(), buf.data() + r * c, c, dt)->wait();
    const std::vector<T> in_place = buf.download();
    EXPECT_TRUE(exact("in-place reduce_scatter " + at, in_place, r * c, c,
                      [&](std::size_t k) { return sum_result(n, r * c + k); }));
    EXPECT_TRUE(guard_intact("in-place reduce_scatter " + at, in_place, c * n));

    send.upload(make<T>(c * n, [&](std::size_t j) { return max_input(r, n, j); }));
    comm_->reduce_scatter(send.data(), recv.data(), c, dt, ReduceOp::max)->wait();
    EXPECT_TRUE(exact("reduce_scatter max " + at, recv.download(), 0, c,
                      [&](std::size_t k) { return max_result(n, r * c + k); }));
  }
}

template <typename T>
void Nccl::all_gather_exact() {
  const DType dt = dtype_of<T>();
  const int r = r_, n = n_;
  for (std::size_t c : kCounts) {
    const std::string at = detail::concat(dtype_name(dt), " count ", c);
    DeviceArray<T> send(c, s_), recv(c * n + kGuard, s_);
    send.upload(make<T>(c, [&](std::size_t k) { return tag_input(r, k); }));
    recv.upload(make<T>(c * n + kGuard, [](std::size_t) { return kSentinel; }));
    comm_->all_gather(send.data(), recv.data(), c, dt)->wait();
    const std::vector<T> got = recv.download();
    EXPECT_TRUE(exact("all_gather " + at, got, 0, c * n,
                      [&](std::size_t j) { return tag_input(int(j / c), j % c); }));
    EXPECT_TRUE(guard_intact("all_gather " + at, got, c * n));

    // In place by NCCL's convention: send == recv + rank * count.
    DeviceArray<T> buf(c * n + kGuard, s_);
    buf.upload(make<T>(c * n + kGuard, [&](std::size_t j) {
      return j / c == std::size_t(r) && j < c * n ? tag_input(r, j % c) : kSentinel;
    }));
    comm_->all_gather(buf.data() + r * c, buf.data(), c, dt)->wait();
    const std::vector<T> in_place = buf.download();
    EXPECT_TRUE(exact("in-place all_gather " + at, in_place, 0, c * n,
                      [&](std::size_t j) { return tag_input(int(j / c), j % c); }));
    EXPECT_TRUE(guard_intact("in-place all_gather " + at, in_place, c * n));
  }
}

template <typename T>
void Nccl::all_reduce_exact() {
  const DType dt = dtype_of<T>();
  const int r = r_, n = n_;
  for (std::size_t c : kCounts) {
    const std::string at = detail::concat(dtype_name(dt), " count ", c);
    DeviceArray<T> buf(c + kGuard, s_);
    buf.upload(make<T>(c + kGuard, [&](std::size_t j) { return j < c ? sum_input(r, j) : kSentinel; }));
    comm_->all_reduce(buf.data(), c, dt)->wait();
    std::vector<T> got = buf.download();
    EXPECT_TRUE(exact("all_reduce sum " + at, got, 0, c, [&](std::size_t j) { return sum_result(n, j); }));
    EXPECT_TRUE(guard_intact("all_reduce sum " + at, got, c));

    buf.upload(make<T>(c + kGuard, [&](std::size_t j) { return j < c ? max_input(r, n, j) : kSentinel; }));
    comm_->all_reduce(buf.data(), c, dt, ReduceOp::max)->wait();
    got = buf.download();
    EXPECT_TRUE(exact("all_reduce max " + at, got, 0, c, [&](std::size_t j) { return max_result(n, j); }));
    EXPECT_TRUE(guard_intact("all_reduce max " + at, got, c));
  }
}

template <typename T>
void Nccl::broadcast_exact() {
  const DType dt = dtype_of<T>();
  const int r = r_;
  for (std::size_t c : kCounts) {
    for (int root = 0; root < n_; ++root) {
      const std::string at = detail::concat(dtype_name(dt), " count ", c, " root ", root);
      DeviceArray<T> buf(c + kGuard, s_);
      buf.upload(make<T>(c + kGuard, [&](std::size_t j) { return j < c ? tag_input(r, j) : kSentinel; }));
      comm_->broadcast(buf.data(), c, dt, root)->wait();
      const std::vector<T> got = buf.download();
      EXPECT_TRUE(exact("broadcast " + at, got, 0, c, [&](std::size_t j) { return tag_input(root, j); }));
      EXPECT_TRUE(guard_intact("broadcast " + at, got, c));
    }
  }
}

// The communicator's one device buffer (the barrier's int32) is taken from the device's allocator, so the
// device budget sees it, and is given back when the communicator goes.
TEST_F(Nccl, TheBarrierBufferIsUnderTheDeviceBudget) {
  MemoryBudget& b = dev_->budget(MemoryKind::device);
  EXPECT_EQ(b.used() - device_used_before_comm_, sizeof(std::int32_t));
  comm_->barrier()->wait();
  comm_.reset();
  EXPECT_EQ(b.used(), device_used_before_comm_);
}

TEST_F(Nccl, ReduceScatterSumAndMaxAreExactInAndOutOfPlaceInFp32Bf16Fp64) {
  reduce_scatter_exact<float>();
  reduce_scatter_exact<bf16>();
  reduce_scatter_exact<double>();
}

TEST_F(Nccl, AllGatherPutsRankQsInputInSliceQInAndOutOfPlaceInFp32Bf16Fp64) {
  all_gather_exact<float>();
  all_gather_exact<bf16>();
  all_gather_exact<double>();
}

TEST_F(Nccl, AllReduceSumAndMaxAreExactOnEveryRankInFp32Bf16Fp64) {
  all_reduce_exact<float>();
  all_reduce_exact<bf16>();
  all_reduce_exact<double>();
}

TEST_F(Nccl, BroadcastFromEachRootReachesEveryRankInFp32Bf16Fp64) {
  broadcast_exact<float>();
  broadcast_exact<bf16>();
  broadcast_exact<double>();
}

TEST_F(Nccl, Uint16TravelsAsBytesInAllGatherAndHasNoReduction) {
  const std::size_t c = 1001;
  std::vector<std::uint16_t> mine(c);
  for (std::size_t k = 0; k < c; ++k) mine[k] = std::uint16_t(0xA500 + 0x10 * r_ + k % 13);
  DeviceArray<std::uint16_t> send(c, s_), recv(c * n_, s_);
  send.upload(mine);
  comm_->all_gather(send.data(), recv.data(), c, DType::u16)->wait();
  const std::vector<std::uint16_t> got = recv.download();
  for (std::size_t j = 0; j < c * n_; ++j)
    ASSERT_EQ(got[j], std::uint16_t(0xA500 + 0x10 * (j / c) + (j % c) % 13)) << "at " << j;
  try {
    comm_->all_reduce(send.data(), c, DType::u16);
    ADD_FAILURE() << "a uint16 all_reduce was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("all_reduce of uint16 is not supported"), std::string::npos)
        << e.what();
  }
  comm_->barrier()->wait();  // the refused call was numbered nowhere: the ranks are still in step
}

TEST_F(Nccl, BadArgumentsAreRefusedBeforeAnythingIsEnqueued) {
  DeviceArray<float> buf(64, s_);
  EXPECT_THROW(comm_->broadcast(buf.data(), 4, DType::f32, n_), Error);
  EXPECT_THROW(comm_->broadcast(buf.data(), 4, DType::f32, -1), Error);
  // Overlapping without being this rank's slice (NCCL's in-place conventions are the only overlap).
  EXPECT_THROW(comm_->reduce_scatter(buf.data(), buf.data() + 1, 4, DType::f32), Error);
  EXPECT_THROW(comm_->all_gather(buf.data() + 1, buf.data(), 4, DType::f32), Error);
  comm_->all_reduce(nullptr, 0, DType::f32)->wait();  // count 0: numbered, nothing moves
  comm_->barrier()->wait();
}

TEST_F(Nccl, StatsFollowTheBusBandwidthConventionAndTimeEveryCollective) {
  DeviceArray<float> buf(2000, s_);
  buf.upload(std::vector<float>(2000, 1.0f));
  comm_->all_reduce(buf.data(), 1000, DType::f32)->wait();
  comm_->reduce_scatter(buf.data(), buf.data() + 1000, 10, DType::f32)->wait();
  comm_->all_gather(buf.data(), buf.data() + 1000, 10, DType::f32)->wait();
  comm_->broadcast(buf.data(), 10, DType::f32, 0)->wait();
  comm_->barrier()->wait();
  const CommStats s = comm_->stats();
  const double n = n_;
  auto idx = [](Collective k) { return int(k); };
  for (int k = 0; k < kNumCollectives; ++k) EXPECT_EQ(s.calls[k], 1) << collective_name(Collective(k));
  EXPECT_DOUBLE_EQ(s.elements_sent[idx(Collective::all_reduce)], 2.0 * (n - 1) / n * 1000);
  EXPECT_DOUBLE_EQ(s.elements_sent[idx(Collective::reduce_scatter)], (n - 1) * 10);
  EXPECT_DOUBLE_EQ(s.elements_sent[idx(Collective::all_gather)], (n - 1) * 10);
  EXPECT_DOUBLE_EQ(s.elements_sent[idx(Collective::broadcast)], r_ == 0 && n_ > 1 ? 10.0 : 0.0);
  EXPECT_DOUBLE_EQ(s.bytes_sent[idx(Collective::all_reduce)], 4 * 2.0 * (n - 1) / n * 1000);
  EXPECT_DOUBLE_EQ(s.elements_sent[idx(Collective::barrier)], 0.0);
  for (int k = 0; k < kNumCollectives; ++k) {
    // (At 1 rank NCCL may move nothing: an in-place collective there can take no GPU time at all.)
    EXPECT_GE(s.busy_seconds[k], 0.0) << collective_name(Collective(k));
    if (n_ > 1) {
      EXPECT_GT(s.busy_seconds[k], 0.0) << collective_name(Collective(k));
    }
    EXPECT_LT(s.busy_seconds[k], 10.0) << collective_name(Collective(k));
    EXPECT_GE(s.wait_seconds[k], 0.0) << collective_name(Collective(k));
  }
  comm_->reset_stats();
  EXPECT_EQ(comm_->stats().calls[idx(Collective::all_reduce)], 0);
}

// The producer's copies are still running when the collective is called (a large copy is queued
// first): without the comm stream waiting on the producer's event, the all_reduce would read stale
// input. The consumer stream waits on the Work without the host blocking.
TEST_F(Nccl, AProducerStreamOrdersTheInputAndWaitOnAStreamOrdersTheOutput) {
  cuda::CudaStream producer, consumer;
  const std::size_t big = std::size_t(64) << 20, c = 1000;
  DeviceArray<char> a(big, producer.get()), b(big, producer.get());
  DeviceArray<float> buf(c, s_);
  buf.upload(std::vector<float>(c, -7.0f));  // stale values the collective must not see
  std::vector<float> input(c);
  for (std::size_t j = 0; j < c; ++j) input[j] = sum_input(r_, j);
  comm_->set_producer_stream(&producer);
  for (int i = 0; i < 8; ++i)
    TZ_CUDA_CHECK(cudaMemcpyAsync(b.data(), a.data(), big, cudaMemcpyDeviceToDevice, producer.get()));
  TZ_CUDA_CHECK(
      cudaMemcpyAsync(buf.data(), input.data(), c * sizeof(float), cudaMemcpyHostToDevice, producer.get()));
  auto w = comm_->all_reduce(buf.data(), c, DType::f32);
  comm_->set_producer_stream(nullptr);
  w->wait(consumer);
  std::vector<float> got(c);
  TZ_CUDA_CHECK(
      cudaMemcpyAsync(got.data(), buf.data(), c * sizeof(float), cudaMemcpyDeviceToHost, consumer.get()));
  consumer.synchronize();
  EXPECT_TRUE(
      exact("all_reduce after the producer", got, 0, c, [&](std::size_t j) { return sum_result(n_, j); }));
  w.reset();  // ordered on a stream: destroying it does not block
  producer.synchronize();
}

TEST_F(Nccl, AWorkDestroyedUnwaitedCompletesAndDoneNeverBlocks) {
  DeviceArray<double> buf(1000, s_);
  buf.upload(make<double>(1000, [&](std::size_t j) { return sum_input(r_, j); }));
  auto w = comm_->all_reduce(buf.data(), 1000, DType::f64);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!w->done()) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the all_reduce never completed";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  w->wait();  // already complete: returns at once
  EXPECT_TRUE(
      exact("all_reduce done()", buf.download(), 0, 1000, [&](std::size_t j) { return sum_result(n_, j); }));
  comm_->all_reduce(buf.data(), 1000, DType::f64).reset();  // waits in the destructor
  EXPECT_TRUE(exact("second all_reduce", buf.download(), 0, 1000,
                    [&](std::size_t j) { return n_ * sum_result(n_, j); }));
}

// A group of all-gathers and a reduce-scatter is launched at group_end: a Work waited on before it
// throws (naming the rule) without failing the communicator, done() says false meanwhile, and after the
// end every result is exact. Stats count each collective of the group.
TEST_F(Nccl, AGroupLaunchesAtItsEndAndItsWorksCannotBeWaitedOnBeforeIt) {
  const std::size_t c = 1000;
  DeviceArray<float> send(c, s_), a(c * n_, s_), b(c * n_, s_), rs(c * n_, s_);
  send.upload(make<float>(c, [&](std::size_t k) { return tag_input(r_, k); }));
  rs.upload(make<float>(c * n_, [&](std::size_t j) { return sum_input(r_, j); }));
  const CommStats before = comm_->stats();
  std::vector<std::unique_ptr<Work>> works;
  {
    CollectiveGroup group(*comm_);
    works.push_back(comm_->all_gather(send.data(), a.data(), c, DType::f32));
    works.push_back(comm_->all_gather(send.data(), b.data(), c, DType::f32));
    works.push_back(comm_->reduce_scatter(rs.data(), rs.data() + r_ * c, c, DType::f32));
    EXPECT_FALSE(works[0]->done());
    try {
      works[1]->wait();
      ADD_FAILURE() << "a Work of an open group was waited on without an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("inside its collective group"), std::string::npos) << e.what();
    }
    EXPECT_THROW(works[2]->wait(comm_->stream()), Error);
    group.end();
  }
  for (auto& w : works) w->wait();
  auto gathered = [&](std::size_t j) { return tag_input(int(j / c), j % c); };
  EXPECT_TRUE(exact("grouped all_gather 1", a.download(), 0, c * n_, gathered));
  EXPECT_TRUE(exact("grouped all_gather 2", b.download(), 0, c * n_, gathered));
  EXPECT_TRUE(exact("grouped reduce_scatter", rs.download(), r_ * c, c,
                    [&](std::size_t k) { return sum_result(n_, r_ * c + k); }));
  const CommStats after = comm_->stats();
  EXPECT_EQ(after.calls[int(Collective::all_gather)] - before.calls[int(Collective::all_gather)], 2);
  EXPECT_EQ(after.calls[int(Collective::reduce_scatter)] - before.calls[int(Collective::reduce_scatter)], 1);
  // The communicator still works, and groups do not nest.
  comm_->barrier()->wait();
  comm_->group_start();
  EXPECT_THROW(comm_->group_start(), Error);
  comm_->group_end();
  EXPECT_THROW(comm_->group_end(), Error);
}

// Rank 1 never joins rank 0's all_reduce: rank 0's call or wait throws within its 2 s timeout + 2 s,
// naming the collective, and every later call throws the same message. Rank 1 has a longer timeout (its
// watchdog's grace), so its communicator, never used, is destroyed quietly after the ranks meet again
// over MPI.
TEST_F(Nccl, AMissedDeadlineAbortsTheCommunicatorAndNamesTheCollective) {
  if (n_ < 2) GTEST_SKIP() << "needs 2 ranks, has " << n_;
  comm_->set_timeout(std::chrono::seconds(r_ == 0 ? 2 : 10));
  if (r_ == 0) {
    DeviceArray<float> buf(1024, s_);
    buf.upload(std::vector<float>(1024, 1.0f));
    const auto t0 = std::chrono::steady_clock::now();
    std::string message;
    try {
      comm_->all_reduce(buf.data(), 1024, DType::f32)->wait();
      ADD_FAILURE() << "an all_reduce that rank 1 never joined completed";
    } catch (const Error& e) {
      message = e.what();
    }
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(took, 4.0) << message;
    EXPECT_GE(took, 1.9) << message;
    EXPECT_NE(
        message.find("all_reduce #1 of 1024 fp32 elements on NCCL world (" + std::to_string(n_) + " ranks"),
        std::string::npos)
        << message;
    EXPECT_NE(message.find("has not completed"), std::string::npos) << message;
    EXPECT_NE(message.find("timeout 2000 ms"), std::string::npos) << message;
    try {
      comm_->barrier();
      ADD_FAILURE() << "a call on a failed communicator was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
  mpi_->barrier()->wait();
  comm_.reset();
  mpi_->barrier()->wait();
}

TEST(NcclLocalGpu, IsTheLocalRankModuloTheVisibleGpus) {
  WorldInfo w;
  w.local_rank = 3;
  EXPECT_EQ(local_gpu(w, 8), 3);
  EXPECT_EQ(local_gpu(w, 1), 0);  // one GPU per rank (Slurm --gpus-per-task): index 0
  EXPECT_EQ(local_gpu(w, 2), 1);
  EXPECT_THROW(local_gpu(w, 0), Error);
}

}  // namespace
}  // namespace tz
