// make_host_world: a process no launcher started is a world of one without MPI (MPI is never
// initialised, so no orted or MCA component is needed); the launcher's variables select MPI.
#include <gtest/gtest.h>
#include <mpi.h>

#include "comm/communicator.h"
#include "comm/world.h"

namespace tz {
namespace {

TEST(HostWorld, WithoutALauncherItIsTheSelfCommunicatorAndMpiIsNeverInitialised) {
  WorldInfo single;  // source "single": what discover_world() says with no OMPI_* or SLURM_* variables
  auto world = make_host_world(single);
  EXPECT_EQ(world->size(), 1);
  EXPECT_EQ(world->rank(), 0);
  EXPECT_EQ(world->name(), "self (1 rank)");
  float x = 3.0f;
  world->all_reduce(&x, 1, DType::f32, ReduceOp::sum)->wait();
  EXPECT_EQ(x, 3.0f);
  int initialized = 1;
  ASSERT_EQ(MPI_Initialized(&initialized), MPI_SUCCESS);
  EXPECT_EQ(initialized, 0);
}

TEST(HostWorld, DiscoveryWithoutLauncherVariablesIsSingle) {
  const WorldInfo w = discover_world([](const char*) -> const char* { return nullptr; });
  EXPECT_EQ(w.source, "single");
  EXPECT_EQ(w.size, 1);
}

}  // namespace
}  // namespace tz
