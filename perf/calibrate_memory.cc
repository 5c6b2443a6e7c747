// The memory lines of `tierzero bench calibrate`: resident-set growth around the collectives and matrix
// products training runs.
#include "perf/calibrate_memory.h"

#include <algorithm>
#include <vector>

#include "core/backend.h"
#include "core/device.h"
#include "core/heap.h"
#include "core/resident_memory.h"
#include "model/model_family.h"
#include "perf/step_bench.h"
#include "zero/zero_options.h"

namespace tz {
namespace {

// The growth of the peak resident set while f() runs; -1 where the peak cannot be reset.
template <class F>
double peak_growth(F&& f) {
  if (!reset_resident_peak()) return -1;
  const double before = double(resident_status_bytes("VmHWM"));
  f();
  return std::max(0.0, double(resident_status_bytes("VmHWM")) - before);
}

}  // namespace

double measure_comm_temporaries(Communicator& comm, std::size_t piece_bytes) {
  const int n = comm.size();
  const std::size_t was = comm.piece_bytes();
  comm.set_piece_bytes(piece_bytes);
  const std::size_t count = std::max<std::size_t>(1, 16 * piece_bytes / sizeof(float));  // per rank
  std::vector<float> send(count * std::size_t(n), 1.0f), recv(count, 0.0f);               // resident: written
  comm.barrier()->wait();
  double grew = peak_growth([&] {
    comm.reduce_scatter(send.data(), recv.data(), count, DType::f32)->wait();
    comm.all_reduce(send.data(), send.size(), DType::f32)->wait();
    comm.all_gather(recv.data(), send.data(), count, DType::f32)->wait();
    comm.barrier()->wait();
  });
  comm.set_piece_bytes(was);
  // Every rank's figure, the largest kept (-1 anywhere: not measured).
  double v[2] = {grew, grew < 0 ? 1.0 : 0.0};
  comm.all_reduce(v, 2, DType::f64, ReduceOp::max)->wait();
  if (v[1] > 0) return -1;
  return std::max(0.0, v[0] - double(comm_staging_bytes(piece_bytes)));
}

double measure_libraries(const CalibrateOptions& opt, int* products) {
  // Two fp32 steps of opt's model on the training path (after one warm-up): everything they make
  // resident beyond the plan's buffers.
  StepBenchOptions so;
  so.model = opt.model;
  so.model_name = opt.model_name;
  so.micro_batch = opt.micro_batch;
  so.seq_len = opt.seq_len;
  so.dtypes = {DType::f32};
  so.warmup_steps = 1;
  so.steps = 2;
  so.residue = true;
  const nlohmann::json r = run_step_bench(so, true);
  release_free_heap();  // what the steps freed goes back, as train returns its set-up's before the first step
  *products = int(model_family(opt.model).gemm_shapes(opt.model, ModelShape{opt.micro_batch, opt.seq_len}, DType::f32).size());
  return r[std::string(dtype_name(DType::f32))].value("resident_residue_bytes", -1.0);
}

MemoryLines measure_memory_lines(const CalibrateOptions& opt, Communicator* comm) {
  MemoryLines m;
  // The libraries first, in a process that has run nothing yet, as a training process starts its steps;
  // then the collectives.
  int products = 0;
  m.libraries = measure_libraries(opt, &products);
  if (comm && comm->size() > 1) {  // every rank's figure, the largest kept (-1 anywhere: not measured)
    double v[2] = {m.libraries, m.libraries < 0 ? 1.0 : 0.0};
    comm->all_reduce(v, 2, DType::f64, ReduceOp::max)->wait();
    m.libraries = v[1] > 0 ? -1 : v[0];
  }
  if (m.libraries >= 0) m.products = products;
  m.heap = heap_allocator();
  if (comm && comm->size() > 1) {
    const std::size_t piece = ZeroOptions{}.comm_piece_bytes;  // training's default
    const double t = measure_comm_temporaries(*comm, piece);
    if (t >= 0) {
      m.comm_piece_bytes = double(piece);
      m.add_comm(comm->size(), t);
    }
  }
  return m;
}

}  // namespace tz
