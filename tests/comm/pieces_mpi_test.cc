// The MPI communicator's pieces (Communicator::set_piece_bytes) at 1-4 ranks: a reduce-scatter or
// all-reduce run as pieces gives the whole message's result exactly (in place and not, sums and max, every
// piece size down to one element, uneven last pieces), several in flight complete in any wait order, one
// call is counted per collective, and the temporaries Open MPI allocates stay within the pieces' bound,
// measured as the growth of the process's peak resident set.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "comm/mpi_comm.h"
#include "core/dtype.h"
#include "core/poison.h"
#include "core/resident_memory.h"
#include "tests/common/float_values.h"

namespace tz {
namespace {

using test::from_f;
using test::to_f;

const std::size_t kCounts[] = {1, 7, 1000, 4097};
constexpr std::size_t kGuard = 3;
constexpr float kSentinel = -1000.0f;

// Small integers: every partial sum is exact in bf16, so the result cannot depend on the order of the adds.
float sum_input(int r, std::size_t j) { return float(r + 1) * float(int(j % 7) - 3); }
float sum_result(int n, std::size_t j) { return float(n * (n + 1) / 2) * float(int(j % 7) - 3); }
float max_input(int r, int n, std::size_t j) { return float(int((std::size_t(r) + j) % std::size_t(n)) - 1) * float(j % 5 + 1); }
float max_result(int n, std::size_t j) { return float(n - 2) * float(j % 5 + 1); }

std::unique_ptr<Communicator> world(std::size_t piece_bytes) {
  auto c = make_mpi_world();
  c->set_timeout(std::chrono::seconds(20));
  c->set_piece_bytes(piece_bytes);
  return c;
}

// Piece sizes in bytes for elements of `es` bytes at `n` ranks: one element per rank, an uneven size,
// and larger ones.
std::vector<std::size_t> piece_sizes(std::size_t es, int n) { return {es * n, 3 * es * n + 1, 100, 4096}; }

template <typename T>
class Pieces : public ::testing::Test {};
using DTypes = ::testing::Types<float, bf16, double>;
TYPED_TEST_SUITE(Pieces, DTypes);

TYPED_TEST(Pieces, AReduceScatterInPiecesGivesTheWholeMessagesSum) {
  const DType dt = dtype_of<TypeParam>();
  for (std::size_t piece : piece_sizes(sizeof(TypeParam), 4)) {
    auto comm = world(piece);
    const int r = comm->rank(), n = comm->size();
    for (std::size_t c : kCounts) {
      for (bool in_place : {false, true}) {
        std::vector<TypeParam> send(c * n + kGuard, from_f<TypeParam>(kSentinel));
        for (std::size_t j = 0; j < c * n; ++j) send[j] = from_f<TypeParam>(sum_input(r, j));
        const std::vector<TypeParam> before = send;
        std::vector<TypeParam> out(c + kGuard, from_f<TypeParam>(kSentinel));
        TypeParam* recv = in_place ? send.data() + r * c : out.data();
        comm->reduce_scatter(send.data(), recv, c, dt)->wait();
        std::size_t bad = 0;
        for (std::size_t k = 0; k < c; ++k) bad += to_f(recv[k]) != sum_result(n, r * c + k);
        EXPECT_EQ(bad, 0u) << "piece " << piece << " B, count " << c << (in_place ? ", in place" : "");
        for (std::size_t g = 0; g < kGuard; ++g) {
          EXPECT_EQ(to_f(send[c * n + g]), kSentinel) << "guard after the send buffer";
          if (!in_place) {
            EXPECT_EQ(to_f(out[c + g]), kSentinel) << "guard after recv";
          }
        }
        if (!in_place) {
          EXPECT_EQ(std::memcmp(send.data(), before.data(), send.size() * sizeof(TypeParam)), 0);
        }
      }
    }
  }
}

TYPED_TEST(Pieces, AnAllReduceInPiecesGivesTheWholeMessagesSumAndMax) {
  const DType dt = dtype_of<TypeParam>();
  for (std::size_t piece : piece_sizes(sizeof(TypeParam), 1)) {
    auto comm = world(piece);
    const int r = comm->rank(), n = comm->size();
    for (std::size_t c : kCounts) {
      std::vector<TypeParam> sum(c + kGuard, from_f<TypeParam>(kSentinel)), mx = sum;
      for (std::size_t j = 0; j < c; ++j) sum[j] = from_f<TypeParam>(sum_input(r, j)), mx[j] = from_f<TypeParam>(max_input(r, n, j));
      comm->all_reduce(sum.data(), c, dt)->wait();
      comm->all_reduce(mx.data(), c, dt, ReduceOp::max)->wait();
      std::size_t bad = 0;
      for (std::size_t j = 0; j < c; ++j) bad += (to_f(sum[j]) != sum_result(n, j)) + (to_f(mx[j]) != max_result(n, j));
      EXPECT_EQ(bad, 0u) << "piece " << piece << " B, count " << c;
      for (std::size_t g = 0; g < kGuard; ++g) EXPECT_EQ(to_f(sum[c + g]), kSentinel) << "guard after the buffer";
    }
  }
}

// Five reducing collectives and a gather in flight at once, more than kReducingPiecesInFlight: the later
// ones wait for a slot, in call order, and every one completes exactly whatever order they are waited in.
TEST(Pieces, ManyInFlightCompleteWhenWaitedInReverseOrder) {
  auto comm = world(64);
  const int r = comm->rank(), n = comm->size();
  const std::size_t c = 1000;
  std::vector<std::vector<float>> rs_send(3, std::vector<float>(c * n)), rs_recv(3, std::vector<float>(c));
  std::vector<std::vector<float>> ar(2, std::vector<float>(c));
  std::vector<float> ag(c * n, kSentinel);
  for (auto& s : rs_send)
    for (std::size_t j = 0; j < s.size(); ++j) s[j] = sum_input(r, j);
  for (auto& a : ar)
    for (std::size_t j = 0; j < c; ++j) a[j] = sum_input(r, j);
  for (std::size_t k = 0; k < c; ++k) ag[r * c + k] = float(8 * r + int(k % 7));
  std::vector<std::unique_ptr<Work>> works;
  for (int i = 0; i < 3; ++i) {
    works.push_back(comm->reduce_scatter(rs_send[i].data(), rs_recv[i].data(), c, DType::f32));
    if (i < 2) works.push_back(comm->all_reduce(ar[i].data(), c, DType::f32));
  }
  works.push_back(comm->all_gather(ag.data() + r * c, ag.data(), c, DType::f32));
  for (auto it = works.rbegin(); it != works.rend(); ++it) (*it)->wait();
  for (int i = 0; i < 3; ++i)
    for (std::size_t k = 0; k < c; ++k) ASSERT_EQ(rs_recv[i][k], sum_result(n, r * c + k)) << "reduce_scatter " << i;
  for (int i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < c; ++j) ASSERT_EQ(ar[i][j], sum_result(n, j)) << "all_reduce " << i;
  for (std::size_t j = 0; j < ag.size(); ++j) ASSERT_EQ(ag[j], float(8 * int(j / c) + int(j % c % 7)));
  const CommStats s = comm->stats();  // one call per collective, whatever its pieces
  EXPECT_EQ(s.calls[int(Collective::reduce_scatter)], 3);
  EXPECT_EQ(s.calls[int(Collective::all_reduce)], 2);
  EXPECT_DOUBLE_EQ(s.elements_sent[int(Collective::reduce_scatter)], 3.0 * (n - 1) * c);
}

// The growth of the peak resident set while a 64 MiB reduce-scatter and all-reduce run, on buffers
// already resident.
std::size_t growth_of_a_step(Communicator& comm) {
  const std::size_t elems = std::size_t(16) << 20;  // 64 MiB of fp32
  std::vector<float> send(elems, 1.0f), recv(elems / comm.size(), 0.0f);
  comm.barrier()->wait();
  if (!reset_resident_peak()) return 0;
  const std::size_t before = resident_status_bytes("VmHWM");
  comm.reduce_scatter(send.data(), recv.data(), elems / comm.size(), DType::f32)->wait();
  comm.all_reduce(send.data(), elems, DType::f32)->wait();
  return resident_status_bytes("VmHWM") - before;
}

// Without pieces Open MPI 4.1's libnbc allocates a reduce-scatter's message twice and an all-reduce's
// once, and touches a part of it that depends on the ranks and on what glibc kept from earlier frees
// (16-33 MiB measured for this 64 MiB pair at 2-4 ranks): the control, above 12 MiB, shows that this
// test measures what it claims. With 1 MiB pieces the bound is
// the staging (2 x 1 MiB) plus two pieces' temporaries (2 x 2 x 1 MiB); 8 MiB leaves room for the
// allocator's own.
TEST(Pieces, BoundWhatOpenMpiAllocates) {
  auto whole = world(0), pieces = world(std::size_t(1) << 20);
  if (whole->size() < 2) GTEST_SKIP() << "one rank runs no reduction";
  if (kPoisonDeviceMemory) GTEST_SKIP() << "AddressSanitizer's shadow and quarantine change the resident set";
  if (!reset_resident_peak()) GTEST_SKIP() << "this kernel refuses /proc/self/clear_refs: the peak cannot be measured";
  const std::size_t in_pieces = growth_of_a_step(*pieces), unbounded = growth_of_a_step(*whole);
  EXPECT_LT(in_pieces, std::size_t(8) << 20) << "1 MiB pieces grew the peak resident set by " << in_pieces << " bytes";
  EXPECT_GT(unbounded, std::size_t(12) << 20) << "whole messages grew it by " << unbounded << " bytes";
}

}  // namespace
}  // namespace tz
