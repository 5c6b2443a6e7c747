// The step-time model's communication and cast terms, measured (perf/calibrate_comm.h).
#include "perf/calibrate_comm.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
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

// round_spread(v) on the rank whose mean is largest (every rank gets that rank's).
RoundSpread spread_on_slowest(Communicator& comm, const std::vector<double>& v) {
  const RoundSpread mine = round_spread(v);
  const double top = slowest(comm, mine.mean);
  // The rank that holds the largest mean sends its quartiles (the lowest such rank, by a max of -rank).
  double who = mine.mean == top ? -double(comm.rank()) : -1e9;
  who = -slowest(comm, who);
  double q[2] = {comm.rank() == int(who) ? mine.q1 : -1e300, comm.rank() == int(who) ? mine.q3 : -1e300};
  comm.all_reduce(q, 2, DType::f64, ReduceOp::max)->wait();
  return RoundSpread{top, q[0], q[1]};
}

}  // namespace

RoundSpread round_spread(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::size_t(std::lround(q * double(v.size() - 1)))]; };
  double sum = 0;
  for (std::size_t i = 1; i + 1 < v.size(); ++i) sum += v[i];
  return RoundSpread{v.size() > 2 ? sum / double(v.size() - 2) : median(v), at(0.25), at(0.75)};
}

NetworkRates measure_collective_rates(MpiCommunicator& comm) {
  // Every collective in training's pieces, 4 KiB to 64 MiB: the bus rates at 64 MiB, the latency of the
  // smallest all-reduce.
  CommBenchOptions co;
  co.collectives = {Collective::reduce_scatter, Collective::all_gather, Collective::all_reduce};
  co.min_bytes = 4096;
  co.max_bytes = std::size_t(64) << 20;
  co.iters = 10;
  co.piece_bytes = ZeroOptions{}.comm_piece_bytes;
  const nlohmann::json r = run_comm_bench(comm, co, true);
  NetworkRates n;
  for (const nlohmann::json& row : r["rows"]) {
    if (row["bytes"].get<std::size_t>() != co.max_bytes) continue;
    const std::string c = row["collective"].get<std::string>();
    const double bus = row["busbw_gbs"].get<double>();
    (c == "reduce_scatter" ? n.reduce_scatter_gbs
     : c == "all_gather"   ? n.all_gather_gbs
                           : n.all_reduce_gbs) = bus;
  }
  for (const nlohmann::json& row : r["rows"])
    if (row["collective"] == "all_reduce") {
      n.latency_us = row["time_us"].get<double>();
      break;
    }
  n.nodes = comm.size();
  return n;
}

std::string measure_comm_terms(MpiCommunicator& comm, const CalibrateOptions& opt, Hardware& h) {
  const NetworkRates n = measure_collective_rates(comm);
  h.reduce_scatter_gbs = n.reduce_scatter_gbs, h.all_gather_gbs = n.all_gather_gbs,
  h.all_reduce_gbs = n.all_reduce_gbs;
  h.latency_us = n.latency_us;
  h.intra_gbs = h.all_reduce_gbs;
  h.inter_gbs = h.intra_gbs;  // one node measured: between nodes is unknown (bench calibrate --network)

  // Synchronisation: compute then a small all-reduce waited on, against the same compute alone (all ranks
  // at once in both), less the latency. Each round runs both, begun together at a barrier, and gives their
  // difference; a length's figure is the mean of 31 rounds' differences (less the least and the largest) on
  // the rank where it is largest (a rank that waits for another is the one that pays). Paired rounds cancel
  // what drifts between rounds (another process, the frequency), which the difference of two medians did
  // not (30 ms on one calibration, 36 us on the next). Two lengths of compute, one product and four: the
  // wait grows with the compute before it (ranks sharing cores drift apart while they compute), so the
  // difference per second of compute between the two lengths is sync_fraction and what remains at one
  // product sync_us. One length charged every collective the wait after four products (21.8 ms on the
  // fourth held-out set's calibration), though a stage-3 step's gathers wait after one block's compute;
  // with two, nine calibrations on a 2-vCPU VM read 0.09-0.68 ms after one product and 0.14-1.85 ms after
  // four: sync_us 0-233, sync_fraction 0.005-0.139 (perf/README.md).
  ComputeUnit unit(opt);
  // Seconds of f() on this rank, every rank starting it together at a barrier.
  auto from_barrier = [&](auto&& f) {
    comm.barrier()->wait();
    const auto t0 = Clock::now();
    f();
    return seconds_since(t0);
  };
  const int rounds = 31, reps[2] = {1, 4};
  std::vector<double> alone[2], extra[2];
  double scalar = 1;
  for (int i = 0; i < rounds; ++i)
    for (int k = 0; k < 2; ++k) {
      alone[k].push_back(from_barrier([&] { unit.run(reps[k]); }));
      extra[k].push_back(from_barrier([&] {
        unit.run(reps[k]);
        comm.all_reduce(&scalar, 1, DType::f64)->wait();
      }) - alone[k].back());
    }
  const RoundSpread sync_short = spread_on_slowest(comm, extra[0]), sync = spread_on_slowest(comm, extra[1]);
  const double t_short = slowest(comm, round_spread(alone[0]).mean), t_long = slowest(comm, round_spread(alone[1]).mean);
  h.sync_fraction = t_long > t_short ? std::clamp((sync.mean - sync_short.mean) / (t_long - t_short), 0.0, 1.0) : 0.0;
  h.sync_us = std::max(0.0, (sync_short.mean - h.sync_fraction * t_short - h.latency_us * 1e-6) * 1e6);

  // Overlap: a reduction in flight while compute runs, against each alone. The reduction is a 16 MiB
  // all-reduce in pieces; the compute is as long as it (whole products). Per round, the time both save
  // over one after the other, over the shorter; the mean of 21 rounds (less the least and the largest) on
  // the rank where it is least.
  const std::size_t count = std::size_t(4) << 20;  // floats
  std::vector<float> buf(count, 0.0f);
  auto reduce = [&] { comm.all_reduce(buf.data(), count, DType::f32)->wait(); };
  from_barrier(reduce);  // warm
  const double t_unit = t_long / reps[1];
  std::vector<double> hidden;
  int products = 0;
  for (int i = 0; i < 21; ++i) {
    const double m = from_barrier(reduce);
    if (i == 0) products = int(std::max(1.0, std::round(slowest(comm, m) / t_unit)));
    const double c = from_barrier([&] { unit.run(products); });
    const double both = from_barrier([&] {
      std::unique_ptr<Work> w = comm.all_reduce(buf.data(), count, DType::f32);
      unit.run(products);
      w->wait();
    });
    hidden.push_back((m + c - both) / std::min(m, c));
  }
  for (double& x : hidden) x = -x;  // the least overlap is the largest of the negated
  RoundSpread overlap = spread_on_slowest(comm, hidden);
  overlap = RoundSpread{-overlap.mean, -overlap.q3, -overlap.q1};
  h.comm_overlap = std::clamp(overlap.mean, -10.0, 1.0);
  char line[384];
  std::snprintf(line, sizeof line,
                "sync_us %.0f, sync_fraction %.3f (after %.1f ms of compute %.0f us waited, quartiles of the rounds %.0f "
                "to %.0f; after %.1f ms %.0f us, quartiles %.0f to %.0f), comm_overlap %+.2f (quartiles %+.2f to %+.2f)",
                h.sync_us, h.sync_fraction, t_short * 1e3, sync_short.mean * 1e6, sync_short.q1 * 1e6,
                sync_short.q3 * 1e6, t_long * 1e3, sync.mean * 1e6, sync.q1 * 1e6, sync.q3 * 1e6, h.comm_overlap,
                overlap.q1, overlap.q3);
  return line;
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
