// Collective bandwidth benchmark: per collective and size, check exact results once, then time
// warm-up + timed iterations of the Communicator and of the same blocking MPI call on the same buffers.
#include "perf/comm_bench.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/memory_budget.h"

namespace tz {
namespace {

using Clock = std::chrono::steady_clock;

// Buffers hold any of the three float types; elements are read and written through float.
void store(std::byte* base, std::size_t i, DType dt, float v) {
  if (dt == DType::f32) {
    std::memcpy(base + 4 * i, &v, 4);
  } else {
    std::uint16_t h = dt == DType::bf16 ? float_to_bf16(v).bits : float_to_fp16(v).bits;
    std::memcpy(base + 2 * i, &h, 2);
  }
}

float load(const std::byte* base, std::size_t i, DType dt) {
  if (dt == DType::f32) {
    float v;
    std::memcpy(&v, base + 4 * i, 4);
    return v;
  }
  std::uint16_t h;
  std::memcpy(&h, base + 2 * i, 2);
  return dt == DType::bf16 ? bf16_to_float(bf16{h}) : fp16_to_float(fp16{h});
}

// Exact-result inputs (nccl-tests' verifiable idea): small integers whose partial sums stay exact in
// bf16 (|sum| <= 3 x 1.5n, below 256 up to 56 ranks) whatever order MPI adds them in.
float sum_input(int r, std::size_t j) { return float(int(j % 7) - 3) * float(1 + r % 2); }
float sum_result(int n, std::size_t j) { return float(int(j % 7) - 3) * float(n + n / 2); }
// All-gather input: depends on rank and index, so a slice in the wrong place shows.
float tag_input(int r, std::size_t k) { return float(int((3 * std::size_t(r) + k) % 61) - 30); }

// One size of one collective: the full message and the per-rank count.
struct Shape {
  std::size_t total = 0;     // elements in the full message
  std::size_t per_rank = 0;  // reduce-scatter output / all-gather input; the whole buffer for all-reduce
};

Shape shape_for(Collective c, std::size_t bytes, DType dt, int n) {
  Shape s;
  s.total = bytes / dtype_size(dt);
  if (c == Collective::all_reduce) {
    s.per_rank = s.total;
  } else {
    s.per_rank = s.total / std::size_t(n);  // round down to a multiple of n, as nccl-tests does
    s.total = s.per_rank * std::size_t(n);
  }
  return s;
}

}  // namespace

double bus_bandwidth_factor(Collective c, int n) {
  switch (c) {
    case Collective::all_reduce:
      return 2.0 * (n - 1) / n;
    case Collective::reduce_scatter:
    case Collective::all_gather:
      return double(n - 1) / n;
    case Collective::broadcast:
      return 1.0;
    case Collective::barrier:
      return 0.0;
  }
  return 0.0;
}

nlohmann::json run_comm_bench(MpiCommunicator& comm, const CommBenchOptions& opt, bool quiet) {
  const int r = comm.rank(), n = comm.size();
  const DType dt = opt.dtype;
  const std::size_t es = dtype_size(dt);
  TZ_CHECK(dt == DType::f32 || dt == DType::bf16 || dt == DType::f16,
           "bench comm measures fp32, bf16 or fp16");
  TZ_CHECK(opt.min_bytes >= 1 && opt.min_bytes <= opt.max_bytes,
           "--min-bytes must be at least 1 and at most --max-bytes");
  TZ_CHECK(opt.iters >= 1 && opt.warmup_iters >= 0,
           "--iters must be at least 1 and --warmup-iters at least 0");
  for (Collective c : opt.collectives)
    TZ_CHECK(c == Collective::all_reduce || c == Collective::reduce_scatter || c == Collective::all_gather,
             "bench comm measures all_reduce, reduce_scatter and all_gather, not ", collective_name(c));
  comm.set_piece_bytes(opt.piece_bytes);  // the path training runs
  const MPI_Comm mc = comm.mpi_comm();
  const MPI_Datatype mdt = mpi_datatype(dt);
  const MPI_Op sum = mpi_reduce_op(dt, ReduceOp::sum);
  const bool print = !quiet && r == 0;

  // Allocated once for the largest size: `full` holds a whole message, `part` one rank's slice.
  TZ_CHECK(opt.max_bytes / es <= std::size_t(INT_MAX), "--max-bytes ", opt.max_bytes,
           " is more elements than MPI's int counts allow");
  std::vector<std::byte> full_buf(opt.max_bytes / es * es);
  std::vector<std::byte> part_buf(std::max<std::size_t>(opt.max_bytes / es / std::size_t(n), 1) * es);
  std::byte* full = full_buf.data();
  std::byte* part = part_buf.data();

  auto start_ours = [&](Collective c, const Shape& s) -> std::unique_ptr<Work> {
    if (c == Collective::all_reduce) return comm.all_reduce(full, s.total, dt);
    if (c == Collective::reduce_scatter) return comm.reduce_scatter(full, part, s.per_rank, dt);
    return comm.all_gather(part, full, s.per_rank, dt);
  };
  auto run_mpi = [&](Collective c, const Shape& s) {
    const int k = int(s.per_rank);
    if (c == Collective::all_reduce)
      TZ_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, full, int(s.total), mdt, sum, mc));
    else if (c == Collective::reduce_scatter)
      TZ_MPI_CHECK(MPI_Reduce_scatter_block(full, part, k, mdt, sum, mc));
    else
      TZ_MPI_CHECK(MPI_Allgather(part, k, mdt, full, k, mdt, mc));
  };
  // Mean seconds per call over the timed iterations, the slowest rank's: a collective is done when
  // its last rank is.
  auto timed = [&](auto&& once) {
    for (int i = 0; i < opt.warmup_iters; ++i) once();
    TZ_MPI_CHECK(MPI_Barrier(mc));
    const auto t0 = Clock::now();
    for (int i = 0; i < opt.iters; ++i) once();
    double s = std::chrono::duration<double>(Clock::now() - t0).count() / opt.iters, slowest = 0;
    TZ_MPI_CHECK(MPI_Allreduce(&s, &slowest, 1, MPI_DOUBLE, MPI_MAX, mc));
    return slowest;
  };
  // Elements wrong on all ranks after one call of ours on exact-result inputs (outside the timing).
  auto count_wrong = [&](Collective c, const Shape& s) {
    long long wrong = 0;
    if (c == Collective::all_gather) {
      for (std::size_t k = 0; k < s.per_rank; ++k) store(part, k, dt, tag_input(r, k));
    } else {
      for (std::size_t j = 0; j < s.total; ++j) store(full, j, dt, sum_input(r, j));
    }
    start_ours(c, s)->wait();
    if (c == Collective::all_reduce) {
      for (std::size_t j = 0; j < s.total; ++j) wrong += load(full, j, dt) != sum_result(n, j);
    } else if (c == Collective::reduce_scatter) {
      for (std::size_t k = 0; k < s.per_rank; ++k)
        wrong += load(part, k, dt) != sum_result(n, r * s.per_rank + k);
    } else {
      for (std::size_t j = 0; j < s.total; ++j)
        wrong += load(full, j, dt) != tag_input(int(j / s.per_rank), j % s.per_rank);
    }
    long long total = 0;
    TZ_MPI_CHECK(MPI_Allreduce(&wrong, &total, 1, MPI_LONG_LONG, MPI_SUM, mc));
    return total;
  };

  nlohmann::json out;
  out["bench"] = "comm";
  out["ranks"] = n;
  out["dtype"] = std::string(dtype_name(dt));
  out["warmup_iters"] = opt.warmup_iters;
  out["iters"] = opt.iters;
  out["piece_bytes"] = opt.piece_bytes;
  out["busbw_factor"] = {
      {"all_reduce", "2(n-1)/n"}, {"reduce_scatter", "(n-1)/n"}, {"all_gather", "(n-1)/n"}};
  out["time"] = "mean per call over the timed iterations, slowest rank";
  out["rows"] = nlohmann::json::array();
  if (print) {
    std::printf("# tierzero bench comm: %d ranks, %s, %d warm-up + %d timed iterations per size, reductions in "
                "pieces of %s\n", n, std::string(dtype_name(dt)).c_str(), opt.warmup_iters, opt.iters,
                opt.piece_bytes ? format_bytes(opt.piece_bytes).c_str() : "whole messages");
    std::printf(
        "# size = the full message (all-reduce buffer, reduce-scatter input, all-gather output); "
        "algbw = size / time;\n# busbw = algbw x factor: all_reduce 2(n-1)/n = %.3f, reduce_scatter and "
        "all_gather (n-1)/n = %.3f\n",
        bus_bandwidth_factor(Collective::all_reduce, n), bus_bandwidth_factor(Collective::all_gather, n));
    std::printf(
        "# tierzero = Communicator call + Work::wait(); MPI = the same blocking MPI call on the same "
        "buffers (the limit)\n");
    std::printf("#%-15s %12s %12s %5s | %10s %8s %8s %7s | %10s %8s %8s\n", " collective", "size (B)",
                "count", "type", "time (us)", "algbw", "busbw", "#wrong", "MPI (us)", "algbw", "busbw");
    std::printf("#%-15s %12s %12s %5s | %10s %8s %8s %7s | %10s %8s %8s\n", "", "", "(elements)", "", "",
                "(GB/s)", "(GB/s)", "", "", "(GB/s)", "(GB/s)");
  }
  for (Collective c : opt.collectives) {
    const double factor = bus_bandwidth_factor(c, n);
    for (std::size_t bytes = opt.min_bytes; bytes <= opt.max_bytes; bytes *= 2) {
      const Shape s = shape_for(c, bytes, dt, n);
      if (s.per_rank == 0) continue;  // smaller than one element per rank
      const long long wrong = count_wrong(c, s);
      // Zeros while timing: sums stay finite however many times the buffer is reduced in place.
      std::memset(full, 0, full_buf.size());
      std::memset(part, 0, part_buf.size());
      const double t = timed([&] { start_ours(c, s)->wait(); });
      const double tm = timed([&] { run_mpi(c, s); });
      const double size = double(s.total * es);
      const double algbw = size / t / 1e9, mpi_algbw = size / tm / 1e9;
      nlohmann::json row;
      row["collective"] = collective_name(c);
      row["bytes"] = s.total * es;
      row["count"] = s.total;
      row["count_per_rank"] = s.per_rank;
      row["time_us"] = t * 1e6;
      row["algbw_gbs"] = algbw;
      row["busbw_gbs"] = algbw * factor;
      row["wrong"] = wrong;
      row["mpi_time_us"] = tm * 1e6;
      row["mpi_algbw_gbs"] = mpi_algbw;
      row["mpi_busbw_gbs"] = mpi_algbw * factor;
      out["rows"].push_back(row);
      if (print) {
        std::printf(" %-15s %12zu %12zu %5s | %10.2f %8.3f %8.3f %7lld | %10.2f %8.3f %8.3f\n",
                    collective_name(c).c_str(), s.total * es, s.total, std::string(dtype_name(dt)).c_str(),
                    t * 1e6, algbw, algbw * factor, wrong, tm * 1e6, mpi_algbw, mpi_algbw * factor);
        std::fflush(stdout);
      }
    }
  }
  return out;
}

}  // namespace tz
