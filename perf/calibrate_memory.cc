// The memory lines of `tierzero bench calibrate`: resident-set growth around the collectives and matrix
// products training runs.
#include "perf/calibrate_memory.h"

#include <algorithm>
#include <vector>

#include "core/backend.h"
#include "core/device.h"
#include "core/resident_memory.h"
#include "model/model_family.h"
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
  auto dev = make_cpu_device();
  Backend& be = dev->backend();
  auto s = dev->create_stream();
  const ModelFamily& family = model_family(opt.model);
  const ModelShape shape{opt.micro_batch, opt.seq_len};
  std::vector<std::pair<DType, GemmShape>> all;
  for (DType dt : {DType::f32, DType::bf16})
    for (const GemmShape& g : family.gemm_shapes(opt.model, shape, dt)) all.push_back({dt, g});
  std::size_t a = 1, b = 1, c = 1, ws = 0;
  for (const auto& [dt, g] : all) {
    a = std::max(a, std::size_t(g.M) * g.K);
    b = std::max(b, std::size_t(g.K) * g.N);
    c = std::max(c, std::size_t(g.M) * g.N);
    ws = std::max(ws, gemm_workspace_floats(DeviceKind::cpu, dt, g));
  }
  // The operands and the workspace in device memory, as training plans them, written (resident) first.
  Buffer<float> A(*dev, a, "calibrate A"), B(*dev, b, "calibrate B"), C(*dev, c, "calibrate C"),
      W(*dev, std::max<std::size_t>(ws, 1), "calibrate matmul workspace");
  for (Buffer<float>* x : {&A, &B, &C, &W}) be.memset_async(*s, x->data(), 0, x->bytes());
  be.set_gemm_workspace(W.data(), ws);
  s->synchronize();
  const double grew = peak_growth([&] {
    for (const auto& [dt, g] : all)
      be.gemm(*s, g.ta, g.tb, g.M, g.N, g.K, CView(A.data(), dt), CView(B.data(), dt), View(C.data(), g.out),
              Accumulate::no);
    s->synchronize();
  });
  be.set_gemm_workspace(nullptr, 0);
  *products = int(all.size());
  return grew;
}

MemoryLines measure_memory_lines(const CalibrateOptions& opt, Communicator* comm) {
  MemoryLines m;
  if (comm && comm->size() > 1) {
    const std::size_t piece = ZeroOptions{}.comm_piece_bytes;  // training's default
    const double t = measure_comm_temporaries(*comm, piece);
    if (t >= 0) {
      m.comm_piece_bytes = double(piece);
      m.add_comm(comm->size(), t);
    }
  }
  int products = 0;
  m.libraries = measure_libraries(opt, &products);
  if (m.libraries >= 0) m.products = products;
  return m;
}

}  // namespace tz
