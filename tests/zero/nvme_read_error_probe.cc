// Run at 2 ranks by ctest: rank 1's NVMe store fails a read with -EIO (through the store's test seam)
// during step 2; rank 1 stops with the error and aborts the job, so rank 0, waiting for it in a
// collective, is ended too: every rank stops, none hangs, nothing trains on the lost bytes.
#include <cerrno>
#include <cstdio>
#include <string>

#include "comm/communicator.h"
#include "core/error.h"
#include "train/trainer.h"

int main() {
  auto comm = tz::make_mpi_world();
  tz::set_log_context({comm->rank(), comm->size(), "", "cpu"});
  comm->set_timeout(std::chrono::seconds(20));
  std::string dir = "/tmp/tz_read_error_probe_r" + std::to_string(comm->rank());
  // A rank ended by MPI_Abort cannot remove its store: start from an empty folder each run.
  std::string cmd = "rm -rf " + dir + " && mkdir -p " + dir;
  if (std::system(cmd.c_str()) != 0) return 2;
  tz::TrainOptions o;
  o.model = tz::model_preset("tiny");
  o.steps = 4;
  o.log_every = 0;
  o.dtype = tz::DType::bf16;
  o.zero.stage = 3;
  o.zero.param_persistence_threshold = 0;
  o.offload.optimizer = tz::Tier::nvme;
  o.offload.nvme_paths = {dir};
  o.offload.aio_block_size = 4096;
  tz::TrainHooks hooks;
  if (comm->rank() == 1) {
    // Reads start at step 1's optimizer pass; fail the 5th read completion (step 1 or 2).
    auto reads = std::make_shared<int>(0);
    hooks.engine.nvme_completion_filter = [reads](const tz::CompletionInfo& info, int res) {
      if (info.op == tz::IoOp::read && ++*reads == 5) return -EIO;
      return res;
    };
  }
  try {
    tz::train(o, *comm, [](const std::string&) {}, hooks);
    std::printf("rank %d: finished without the injected error\n", comm->rank());
    return 1;
  } catch (const std::exception& e) {
    std::printf("rank %d stopped: %s\n", comm->rank(), e.what());
    std::fflush(stdout);
    comm->abort(3);
  }
}
