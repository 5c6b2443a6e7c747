// main() for multi-rank GoogleTest executables (tz_add_mpi_test): initialises MPI before any test
// (started without mpirun, the executable is a world of one without MPI: make_host_world), runs every
// test on every rank, prints the results on rank 0 and failures on every rank.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/world.h"
#include "core/error.h"

namespace {

// On ranks other than 0 the default printer is removed (N copies of the same table interleave into
// noise); this one prints only what failed there, prefixed by the rank, so a failure that happens on
// one rank alone is still visible.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    tz::log_line(tz::detail::concat("FAILED ", current_, " at ", r.file_name() ? r.file_name() : "?", ":",
                                    r.line_number(), "\n", r.message()));
  }
  void OnTestStart(const ::testing::TestInfo& t) override {
    current_ = std::string(t.test_suite_name()) + "." + t.name();
  }

 private:
  std::string current_;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::unique_ptr<tz::Communicator> world;
  try {
    world = tz::make_host_world(tz::discover_world());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cannot create the world: %s\n", e.what());
    return 1;
  }
  tz::set_log_context(tz::LogContext{world->rank(), world->size(), tz::discover_world().host, "cpu"});
  if (world->rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter);
  }
  int status = RUN_ALL_TESTS();

  // Every rank learns which ranks failed, so rank 0's summary is the job's. If the ranks fell out of
  // step (a test failed between collectives on some ranks only), this times out and the job is
  // aborted rather than left hanging.
  const float mine = status != 0 ? 1.0f : 0.0f;
  std::vector<float> failed(std::size_t(world->size()), 0.0f);
  try {
    world->set_timeout(std::chrono::seconds(30));
    world->all_gather(&mine, failed.data(), 1, tz::DType::f32)->wait();
  } catch (const std::exception& e) {
    tz::log_line(std::string("ranks out of step after the tests: ") + e.what());
    world->abort(1);
  }
  std::string failed_ranks;
  for (int r = 0; r < world->size(); ++r)
    if (failed[std::size_t(r)] != 0) failed_ranks += (failed_ranks.empty() ? "" : ", ") + std::to_string(r);
  if (!failed_ranks.empty() && world->rank() == 0)
    std::fprintf(stderr, "[rank 0] tests FAILED on rank(s) %s of %d (failures are printed above by rank)\n",
                 failed_ranks.c_str(), world->size());
  // mpirun's exit status is non-zero when any rank's is.
  return failed_ranks.empty() ? 0 : 1;
}
