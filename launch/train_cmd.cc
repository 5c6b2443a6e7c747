// `tierzero train`: flags -> TrainOptions -> train() on every rank.
#include <boost/program_options.hpp>
#include <omp.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "comm/communicator.h"
#include "comm/world.h"
#include "core/device.h"
#include "core/error.h"
#include "core/thread_affinity.h"
#include "launch/commands.h"
#include "launch/flag_table.h"
#include "launch/parse_args.h"
#include "launch/train_flags.h"
#include "train/stop_signals.h"
#include "train/trainer.h"

namespace po = boost::program_options;

namespace tz {
namespace {

// Set by SIGTERM (Slurm's preemption signal), SIGINT or SIGHUP (a closed terminal); read by the
// training loop at each step's end (train/stop_signals.h). The handler only records: however many
// signals come, the run stops once, cleanly. It runs on the thread main() routes the signals to
// (launch/signal_routing.h), never on one inside a oneDNN matmul.
StopSignals g_stop;

extern "C" void on_stop_signal(int sig) { record_stop_signal(g_stop, sig); }

// The one line a stopped run ends with (rank 0) and its status: 0 only when one signal stopped a run
// whose last step's checkpoint is saved (a requeued job continues from it), else 128 + the signal.
int report_stop(const TrainResult& r, bool print) {
  // A stopped run did not do all it was asked (issue 37): 128 + the signal, as a process the signal ended,
  // with or without a checkpoint; the line says whether one was saved.
  const int status = 128 + r.stop_signal;
  if (!print) return status;
  std::string left;
  for (const std::string& what : r.left_out) left += (left.empty() ? "" : ", ") + what;
  std::printf("stopped by SIG%s after step %d (%d signal%s on rank %d): %s%s: exit %d\n",
              sigabbrev_np(r.stop_signal) ? sigabbrev_np(r.stop_signal) : "?", r.stopped_after, r.stop_signals,
              r.stop_signals == 1 ? "" : "s", r.stop_rank,
              r.checkpoint.empty() ? "no checkpoint: the run has no --save-dir (give one to continue a stopped run)"
                                   : ("checkpoint " + r.checkpoint + " saved (continue with --resume latest)").c_str(),
              left.empty() ? "" : ("; a second signal left out " + left).c_str(), status);
  std::fflush(stdout);
  return status;
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &sa, nullptr);
}

// --bind-cores auto: this rank's share of the node's cores; the OpenMP pool sized to its compute cores
// unless OMP_NUM_THREADS says otherwise.
void bind_cores(const WorldInfo& world) {
  const CoreBinding b =
      plan_core_binding(allowed_cores(), int(::sysconf(_SC_NPROCESSORS_ONLN)), world.local_rank, world.local_size);
  apply_core_binding(b);
  if (!std::getenv("OMP_NUM_THREADS")) omp_set_num_threads(int(b.compute.size()));
  log_line("bound to cores " + cores_text(b.compute) + " for compute (" + std::to_string(omp_get_max_threads()) +
           " OpenMP threads)" + (b.io.empty() ? ", I/O threads sharing them" : ", " + cores_text(b.io) + " for I/O") +
           ", from " + b.source);
}

po::options_description train_options(TrainFlags& f) {
  po::options_description desc(
      "tierzero train: train a model (GPT-2, or the Llama family: Llama 3.x, Qwen2.5, Mistral) with ZeRO\n"
      "data parallelism on every rank the launcher starts (mpirun or srun; alone, a world of one), each\n"
      "state class on the tier the flags or a DeepSpeed JSON config (--config) place it\n\n"
      "flags (default in parentheses)");
  add_train_flags(desc, f);
  return desc;
}

}  // namespace

std::vector<FlagTable> train_flag_tables() { return {flag_table("train", train_options)}; }

int train_command(const std::vector<std::string>& args) {
  TrainFlags f;
  po::options_description desc = train_options(f);
  po::variables_map vm;
  if (!parse_args(args, desc, vm, "train")) return 0;
  resolve_train_flags(f, vm);
  TZ_CHECK(device_kind_built(f.o.device), "--device ", device_kind_name(f.o.device), ": ",
           device_traits(f.o.device).unavailable);

  // One process per rank: under mpirun or srun --mpi=pmix the ranks talk over MPI; alone, no MPI.
  WorldInfo world = discover_world();
  derive_batch(f.o, world.size);  // --config's train_batch_size, at this world size (DeepSpeed's rule)
  f.o.ranks_per_node = world.local_size;  // the plan's communication temporaries across nodes
  f.o.gpu = world.local_rank;  // a cuda rank's GPU: its local rank modulo the node's GPU count
  if (const char* job = std::getenv("SLURM_JOB_ID")) f.o.job_id = job;  // recorded in the save-dir's lock
  if (world.rank == 0) {  // what --config resolved or accepted with no effect, once for the job
    for (const std::string& line : f.o.config_lines) std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
  // Before MPI starts its progress thread and OpenMP its pool, so that every thread starts where it belongs.
  if (f.bind_cores == "auto") bind_cores(world);
  std::unique_ptr<Communicator> comm = make_host_world(world);
  // Bounded in seconds (at most kMaxCommTimeoutSeconds) by resolve_train_flags, so the milliseconds fit.
  comm->set_timeout(std::chrono::milliseconds(std::llround(f.comm_timeout * 1000)));
  if (comm->size() != world.size) {
    TZ_FAIL("the launcher says this is rank ", world.rank, " of ", world.size, " (from ", world.source,
            " variables) but MPI sees ", comm->size(),
            " process(es): under Slurm use srun --mpi=pmix (Debian's ",
            "Open MPI needs PMIx), or start the job with mpirun");
  }
  install_stop_handlers();
  try {
    const TrainResult r = train(f.o, *comm, nullptr, {}, &g_stop);
    // Stopped by a signal: the same status on every rank (the highest first signal any rank received).
    if (r.stop_signal > 0) return report_stop(r, comm->rank() == 0);
  } catch (const std::exception& e) {
    // Stop every rank now: the others may be waiting in a collective for this one.
    std::fputs(error_report(e).c_str(), stderr);
    std::fflush(stderr);
    if (comm->size() > 1) comm->abort(1);
    return 1;
  }
  return 0;
}

}  // namespace tz
