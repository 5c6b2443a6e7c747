// The step-time model's communication and cast terms, measured (perf/calibrate_comm.h).
#include "perf/calibrate_comm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/backend.h"
#include "core/device.h"
#include "model/model_family.h"
#include "perf/comm_bench.h"
#include "perf/timing.h"
#include "zero/zero_options.h"

namespace tz {
namespace {

using bench::Clock;
using bench::median;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The slowest rank's figure.
double slowest(Communicator& comm, double v) {
  comm.all_reduce(&v, 1, DType::f64, ReduceOp::max)->wait();
  return v;
}

// A unit of compute training runs: the model's widest forward product (the MLP's), on the CPU backend.
struct ComputeUnit {
  std::unique_ptr<Device> dev = make_cpu_device();
  std::unique_ptr<Stream> s = dev->create_stream();
  GemmShape g;
  Buffer<float> a, b, c;
  explicit ComputeUnit(const CalibrateOptions& opt) {
    const std::vector<GemmShape> shapes =
        model_family(opt.model).gemm_shapes(opt.model, ModelShape{opt.micro_batch, opt.seq_len}, DType::f32);
    g = shapes.front();
    for (const GemmShape& x : shapes)
      if (x.ta == Trans::no && x.tb == Trans::no && double(x.M) * x.N * x.K > double(g.M) * g.N * g.K) g = x;
    a = Buffer<float>(*dev, std::size_t(g.M) * g.K, "calibrate compute A");
    b = Buffer<float>(*dev, std::size_t(g.K) * g.N, "calibrate compute B");
    c = Buffer<float>(*dev, std::size_t(g.M) * g.N, "calibrate compute C");
    for (Buffer<float>* x : {&a, &b, &c}) dev->backend().memset_async(*s, x->data(), 0, x->bytes());
    run(2);
  }
  void run(int times) {
    for (int i = 0; i < times; ++i)
      dev->backend().gemm(*s, g.ta, g.tb, g.M, g.N, g.K, a.data(), b.data(), c.data(), Accumulate::no);
    s->synchronize();
  }
};

}  // namespace

void measure_comm_terms(MpiCommunicator& comm, const CalibrateOptions& opt, Hardware& h) {
  // The rates: every collective in training's pieces, 4 KiB to 64 MiB.
  CommBenchOptions co;
  co.collectives = {Collective::reduce_scatter, Collective::all_gather, Collective::all_reduce};
  co.min_bytes = 4096;
  co.max_bytes = std::size_t(64) << 20;
  co.iters = 10;
  co.piece_bytes = ZeroOptions{}.comm_piece_bytes;
  const nlohmann::json r = run_comm_bench(comm, co, true);
  for (const nlohmann::json& row : r["rows"]) {
    if (row["bytes"].get<std::size_t>() != co.max_bytes) continue;
    const std::string c = row["collective"].get<std::string>();
    const double bus = row["busbw_gbs"].get<double>();
    (c == "reduce_scatter" ? h.reduce_scatter_gbs : c == "all_gather" ? h.all_gather_gbs : h.all_reduce_gbs) = bus;
  }
  for (const nlohmann::json& row : r["rows"])
    if (row["collective"] == "all_reduce") {
      h.latency_us = row["time_us"].get<double>();  // the smallest all-reduce
      break;
    }
  h.intra_gbs = h.all_reduce_gbs;
  h.inter_gbs = h.intra_gbs;  // one node measured: between nodes is unknown (edit the file)

  // Synchronisation: compute then a small all-reduce waited on, against the same compute alone (all ranks
  // at once in both), less the latency. Medians of 9 rounds, each begun together at a barrier.
  ComputeUnit unit(opt);
  // Seconds of f() on this rank, every rank starting it together at a barrier.
  auto from_barrier = [&](auto&& f) {
    comm.barrier()->wait();
    const auto t0 = Clock::now();
    f();
    return seconds_since(t0);
  };
  const int reps = 4;
  std::vector<double> alone, then_reduce;
  double scalar = 1;
  for (int i = 0; i < 9; ++i) {
    alone.push_back(from_barrier([&] { unit.run(reps); }));
    then_reduce.push_back(from_barrier([&] {
      unit.run(reps);
      comm.all_reduce(&scalar, 1, DType::f64)->wait();
    }));
  }
  const double sync_s = slowest(comm, median(then_reduce) - median(alone)) - h.latency_us * 1e-6;
  h.sync_us = std::max(0.0, sync_s * 1e6);

  // Overlap: a reduction in flight while compute runs, against each alone. The reduction is a 16 MiB
  // all-reduce in pieces; the compute is as long as it (whole products).
  const std::size_t count = std::size_t(4) << 20;  // floats
  std::vector<float> buf(count, 0.0f);
  auto reduce = [&] { comm.all_reduce(buf.data(), count, DType::f32)->wait(); };
  from_barrier(reduce);  // warm
  const double t_unit = slowest(comm, median(alone) / reps);
  std::vector<double> tm, tc, tb;
  int products = 0;
  for (int i = 0; i < 7; ++i) {
    tm.push_back(from_barrier(reduce));
    if (i == 0) products = int(std::max(1.0, std::round(slowest(comm, tm[0]) / t_unit)));
    tc.push_back(from_barrier([&] { unit.run(products); }));
    tb.push_back(from_barrier([&] {
      std::unique_ptr<Work> w = comm.all_reduce(buf.data(), count, DType::f32);
      unit.run(products);
      w->wait();
    }));
  }
  const double m = slowest(comm, median(tm)), c = slowest(comm, median(tc)), both = slowest(comm, median(tb));
  h.comm_overlap = std::clamp((m + c - both) / std::min(m, c), -10.0, 1.0);
}

void measure_cast_rate(int ranks, Hardware& h) {
  auto dev = make_cpu_device();
  auto s = dev->create_stream();
  Backend& be = dev->backend();
  const std::size_t n = std::size_t(16) << 20;
  Buffer<float> f(*dev, n, "calibrate cast fp32");
  Buffer<std::uint16_t> lp(*dev, n, "calibrate cast bf16");
  be.memset_async(*s, f.data(), 0, f.bytes());
  be.memset_async(*s, lp.data(), 0, lp.bytes());
  std::vector<double> t;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    be.cast(*s, lp.data(), DType::bf16, f.data(), DType::f32, n);
    be.cast(*s, f.data(), DType::f32, lp.data(), DType::bf16, n);
    s->synchronize();
    if (i) t.push_back(seconds_since(t0));
  }
  h.cast_gbs = 2.0 * double(n) * (4 + 2) / median(t) / 1e9 * ranks;
}

}  // namespace tz
