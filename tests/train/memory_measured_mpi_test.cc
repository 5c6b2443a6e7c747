// The memory plan against an independent measurement: the process's resident memory. For each
// configuration every rank resets its peak resident set (VmHWM), trains a few steps and compares the
// growth of its peak over the resident set before the run with the plan's device + host total. On the
// CPU backend both tiers are this process's memory, so every planned byte is a resident byte once
// touched, and anything the plan misses (oneDNN's and MPI's buffers, temporaries, the data) shows up.
#include <gtest/gtest.h>
#include <malloc.h>

#include <fstream>
#include <string>

#include "comm/communicator.h"
#include "core/poison.h"
#include "tests/common/test_dir.h"
#include "core/resident_memory.h"
#include "train/trainer.h"

namespace tz {
namespace {

void quiet(const std::string&) {}

std::size_t status_bytes(const std::string& field) {
  const std::size_t b = resident_status_bytes(field);
  EXPECT_GT(b, 0u) << "no " << field << " in /proc/self/status";
  return b;
}

// 6 blocks of width 384, byte vocabulary: 10.7M parameters, so each configuration plans 30-200 MB per
// rank, well above the process's own noise (MPI, oneDNN, the corpus: a few MiB).
TrainOptions model(int stage, int steps) {
  TrainOptions o;
  o.model = model_preset("tiny");
  o.model.n_layer = 6;
  o.model.n_head = 6;
  o.model.n_embd = 384;
  o.model.max_seq_len = 64;
  o.seq_len = 64;
  o.micro_batch = 4;
  o.steps = steps;
  o.log_every = 0;
  o.val_batches = 1;
  o.dtype = DType::bf16;
  o.zero.stage = stage;
  o.zero.param_persistence_threshold = 0;
  o.zero.reduce_bucket_size = 2'000'000;
  return o;
}

struct Case {
  const char* name;
  TrainOptions o;
};

std::vector<Case> cases(const std::string& nvme) {
  std::vector<Case> v;
  v.push_back({"stage 0, no offload, fp32", model(0, 3)});
  v.back().o.dtype = DType::f32;
  v.push_back({"stage 1, no offload", model(1, 3)});
  v.push_back({"stage 2, optimizer on the host", model(2, 3)});
  v.back().o.offload.optimizer = Tier::host;
  v.push_back({"stage 3, optimizer and params on the host, checkpointing", model(3, 3)});
  v.back().o.offload.optimizer = Tier::host;
  v.back().o.offload.param = Tier::host;
  v.back().o.checkpointing = ActivationCheckpointing::per_block;
  v.back().o.offload.activations = Tier::host;
  v.push_back({"stage 3, optimizer and params on NVMe", model(3, 3)});
  v.back().o.offload.optimizer = Tier::nvme;
  v.back().o.offload.param = Tier::nvme;
  v.back().o.offload.nvme_paths = {nvme};
  v.back().o.offload.sub_group_size = 1 << 20;
  v.push_back({"stage 2, partial offload (m on the host, v on the device)", model(2, 3)});
  v.back().o.offload.optimizer = Tier::host;
  v.back().o.offload.host_ratio_v = 0;
  return v;
}

TEST(MemoryMeasured, PeakResidentGrowthMatchesThePlannedDevicePlusHostBytes) {
  if (kPoisonDeviceMemory) GTEST_SKIP() << "AddressSanitizer's shadow and quarantine change the resident set";
  auto comm = make_mpi_world();
  testing::TestDir dir;
  // Large blocks come from mmap and go back to the system when freed, so one case's memory does not
  // stay resident into the next case's baseline.
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  mallopt(M_TRIM_THRESHOLD, 128 * 1024);
  for (const Case& c : cases(dir.path())) {
    malloc_trim(0);
    comm->barrier()->wait();
    ASSERT_TRUE(reset_resident_peak()) << "cannot reset VmHWM through /proc/self/clear_refs";
    const std::size_t before = status_bytes("VmRSS");
    TrainResult r = train(c.o, *comm, quiet);
    const double measured = double(status_bytes("VmHWM")) - double(before);
    const double planned = double(r.plan_held_bytes[Tier::device] + r.plan_held_bytes[Tier::host]);
    // Stated tolerance: 5% of the plan plus 16 MiB for what no plan lists (the corpus and its loaders,
    // oneDNN's kernels and scratchpad, MPI's internal buffers, heap slack).
    const double tolerance = 0.05 * planned + 16.0 * (1 << 20);
    std::printf("[rank %d] %-58s planned %8.1f MiB, measured %8.1f MiB (%+.1f%%)\n", comm->rank(), c.name,
                planned / (1 << 20), measured / (1 << 20), 100.0 * (measured - planned) / planned);
    EXPECT_NEAR(measured, planned, tolerance) << c.name;
  }
}

}  // namespace
}  // namespace tz
