// `tierzero bench <name>`: benchmarks; each prints a table, or one JSON object with --json.
#include <boost/program_options.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "comm/mpi_comm.h"
#include "comm/world.h"
#include "core/cpu_adam.h"
#include "core/error.h"
#include "core/memory_budget.h"
#include "launch/bench_gpu_cmd.h"
#include "launch/commands.h"
#include "launch/flag_table.h"
#include "launch/hardware_file.h"
#include "launch/model_options.h"
#include "launch/parse_args.h"
#include "model/checkpoint_tree.h"
#include "model/file_io.h"
#include "model/output_set.h"
#include "perf/adam_bench.h"
#include "perf/calibrate.h"
#include "perf/calibrate_comm.h"
#include "perf/calibrate_memory.h"
#include "perf/comm_bench.h"
#include "perf/io_bench.h"
#include "perf/numa_bench.h"
#include "perf/offload_bench.h"
#include "perf/step_bench.h"
#include "zero/zero_options.h"

namespace po = boost::program_options;

namespace tz {
namespace {

struct OffloadFlags {
  OffloadBenchOptions o;
  bool json = false;
  std::string block = "1M";
};

po::options_description bench_offload_options(OffloadFlags& f) {
  po::options_description desc(
      "tierzero bench offload: the optimizer step over an NVMe-resident shard (master, m and v in a store\n"
      "under --path), pipelined through the swap ring, as a multiple of max(IO alone, Adam alone) on the\n"
      "same shard. #wrong: master values read back from the store that differ from the same steps run in\n"
      "memory (any fails the run)\n\nflags");
  desc.add_options()
      ("help,h", "print this help")
      ("params", po::value(&f.o.params)->default_value(f.o.params), "elements of the shard")
      ("path", po::value(&f.o.path)->default_value(f.o.path), "folder for the swap file")
      ("sub-group-size", po::value(&f.o.sub_group_size)->default_value(f.o.sub_group_size),
       "elements per pipeline stage")
      ("buffer-count", po::value(&f.o.buffer_count)->default_value(f.o.buffer_count),
       "staging buffers in the ring")
      ("block-size", po::value(&f.block)->default_value(f.block), "aio block size")
      ("queue-depth", po::value(&f.o.queue_depth)->default_value(f.o.queue_depth), "aio queue depth")
      ("reps", po::value(&f.o.reps)->default_value(f.o.reps), "repetitions (medians are reported)")
      ("json", po::bool_switch(&f.json), "print one JSON object");
  return desc;
}

int bench_offload(const std::vector<std::string>& args) {
  OffloadFlags f;
  po::options_description desc = bench_offload_options(f);
  OffloadBenchOptions& o = f.o;
  const bool& json = f.json;
  const std::string& block = f.block;
  po::variables_map vm;
  if (!parse_args(args, desc, vm, "bench offload")) return 0;
  o.block_size = parse_bytes(block);
  TZ_CHECK(o.reps >= 1 && o.params >= 1, "--reps and --params must be at least 1");
  auto r = run_offload_bench(o, json);
  if (json) std::cout << r.dump() << "\n";
  return r["wrong"].get<long long>() == 0 ? 0 : 1;  // a pipelined step that changed the bits fails the run
}

struct StepFlags {
  StepBenchOptions o;
  ModelFlags mf{"gpt2"};
  std::string dtypes = "fp32,bf16";
  bool json = false, ckpt = false;
};

po::options_description bench_step_options(StepFlags& f) {
  po::options_description desc(
      "tierzero bench step: training steps (forward, backward, AdamW) on one fixed batch of synthetic\n"
      "tokens, one process on the cpu device at stage 0 without a budget. Per dtype: ms per step and phase,\n"
      "tokens/s, GFLOP/s (tokens x (6 N + 12 L C T), N the parameters without wpe) next to the backend's\n"
      "matmul rate at the model's MLP shape and at 2048^3. The loss must fall from the first step to the\n"
      "last (exit 1 if not).\n\nflags");
  add_model_flags(desc, f.mf);
  desc.add_options()
      ("help,h", "print this help")
      ("micro-batch", po::value(&f.o.micro_batch)->default_value(f.o.micro_batch), "sequences per step")
      ("dtype", po::value(&f.dtypes)->default_value(f.dtypes), "comma-separated compute dtypes to measure")
      ("steps", po::value(&f.o.steps)->default_value(f.o.steps), "timed steps (the median is reported)")
      ("warmup-steps", po::value(&f.o.warmup_steps)->default_value(f.o.warmup_steps), "untimed steps first")
      ("checkpoint-activations", po::bool_switch(&f.ckpt), "recompute activations in backward")
      ("json", po::bool_switch(&f.json), "print one JSON object instead of the table");
  return desc;
}

int bench_step(const std::vector<std::string>& args) {
  StepFlags f;
  po::options_description desc = bench_step_options(f);
  StepBenchOptions& o = f.o;
  const ModelFlags& mf = f.mf;
  const std::string& dtypes = f.dtypes;
  const bool &json = f.json, &ckpt = f.ckpt;
  po::variables_map vm;
  if (!parse_args(args, desc, vm, "bench step")) return 0;
  o.model = resolve_model(mf);
  o.model_name = mf.preset;
  o.seq_len = mf.seq_len;
  o.checkpointing = ckpt ? ActivationCheckpointing::per_block : ActivationCheckpointing::off;
  o.dtypes.clear();
  std::stringstream ss(dtypes);
  for (std::string d; std::getline(ss, d, ',');) o.dtypes.push_back(parse_compute_dtype(d));
  TZ_CHECK(o.steps >= 1, "--steps must be at least 1");
  auto result = run_step_bench(o, json);
  if (json) std::cout << result.dump() << "\n";
  for (DType d : o.dtypes)
    if (!result[std::string(dtype_name(d))]["learns"].get<bool>()) {
      std::fprintf(stderr, "bench step: the %s step did not lower the loss on its repeated batch: %s\n",
                   std::string(dtype_name(d)).c_str(), result[std::string(dtype_name(d))]["losses"].dump().c_str());
      return 1;
    }
  return 0;
}

struct CommFlags {
  CommBenchOptions o;
  std::string ops = "all_reduce,reduce_scatter,all_gather", dtype = "fp32", min_bytes = "1K", max_bytes = "256M",
              piece_bytes = "4M";
  bool json = false;
};

po::options_description bench_comm_options(CommFlags& f) {
  po::options_description desc(
      "tierzero bench comm: bandwidth of the MPI communicator's collectives on host buffers, like nccl-tests.\n"
      "Run it under mpirun (e.g. mpirun -np 2 tierzero bench comm --max-bytes 1M); rank 0 prints.\n"
      "Per size: time per call (mean of the timed iterations, slowest rank), algbw = size / time, and\n"
      "busbw = algbw x factor, with factor 2(n-1)/n for all_reduce and (n-1)/n for reduce_scatter and\n"
      "all_gather (size is the full message: the all-reduce buffer, the reduce-scatter input, the\n"
      "all-gather output). #wrong counts elements that differ from the exact result, checked once\n"
      "outside the timed loop and summed over the ranks (any fails the run). The MPI columns time the\n"
      "same blocking MPI call on the same buffers (MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather):\n"
      "the limit.\n\nflags");
  desc.add_options()
      ("help,h", "print this help")
      ("op", po::value(&f.ops)->default_value(f.ops),
       "comma-separated collectives: all_reduce, reduce_scatter, all_gather")
      ("min-bytes", po::value(&f.min_bytes)->default_value(f.min_bytes),
       "smallest message; sizes double to --max-bytes")
      ("max-bytes", po::value(&f.max_bytes)->default_value(f.max_bytes), "largest message, e.g. 1M, 256M")
      ("dtype", po::value(&f.dtype)->default_value(f.dtype), "element type: fp32, bf16 or fp16")
      ("piece-bytes", po::value(&f.piece_bytes)->default_value(f.piece_bytes),
       "the communicator's pieces, as train's --comm-piece-bytes (0: whole messages)")
      ("iters", po::value(&f.o.iters)->default_value(f.o.iters), "timed iterations per size")
      ("warmup-iters", po::value(&f.o.warmup_iters)->default_value(f.o.warmup_iters),
       "untimed iterations first")
      ("json", po::bool_switch(&f.json), "print one JSON object (its rows array) instead of the table");
  return desc;
}

int bench_comm(const std::vector<std::string>& args) {
  CommFlags f;
  po::options_description desc = bench_comm_options(f);
  CommBenchOptions& o = f.o;
  const std::string &ops = f.ops, &dtype = f.dtype, &min_bytes = f.min_bytes, &max_bytes = f.max_bytes;
  const bool& json = f.json;
  po::variables_map vm;
  if (!parse_args(args, desc, vm, "bench comm")) return 0;
  // Every rank validates the same flags before MPI starts, so a bad flag fails each of them alike.
  o.collectives.clear();
  std::stringstream ss(ops);
  for (std::string op; std::getline(ss, op, ',');) {
    if (op == "all_reduce") o.collectives.push_back(Collective::all_reduce);
    else if (op == "reduce_scatter") o.collectives.push_back(Collective::reduce_scatter);
    else if (op == "all_gather") o.collectives.push_back(Collective::all_gather);
    else TZ_FAIL("unknown collective '", op, "' in --op: use all_reduce, reduce_scatter or all_gather");
  }
  TZ_CHECK(!o.collectives.empty(), "--op names no collective");
  o.dtype = parse_compute_dtype(dtype);
  o.min_bytes = parse_bytes(min_bytes);
  o.max_bytes = parse_bytes(max_bytes);
  o.piece_bytes = parse_bytes(f.piece_bytes);
  TZ_CHECK(o.min_bytes >= 1 && o.min_bytes <= o.max_bytes, "--min-bytes (", min_bytes,
           ") must be at least 1 byte and at most --max-bytes (", max_bytes, "); lower --min-bytes or raise --max-bytes");
  TZ_CHECK(o.iters >= 1 && o.warmup_iters >= 0, "--iters must be at least 1 and --warmup-iters at least 0");

  auto world = make_mpi_world();
  auto& comm = dynamic_cast<MpiCommunicator&>(*world);
  nlohmann::json result;
  try {
    result = run_comm_bench(comm, o, json);
  } catch (const std::exception& e) {
    // The other ranks may be inside a collective this rank will never join: end the job, do not let it hang.
    std::fputs(error_report(e).c_str(), stderr);
    comm.abort(1);
  }
  if (json && comm.rank() == 0) std::cout << result.dump() << "\n";
  // Every rank returns the job's verdict: #wrong is already summed over the ranks.
  for (const auto& row : result["rows"])
    if (row["wrong"].get<long long>() != 0) return 1;
  return 0;
}

struct AdamFlags {
  AdamBenchOptions o;
  ModelFlags mf{o.model_name};
  std::string sub_group = "1e9", working = "fp32,bf16";
  std::string states = "fp32", master = "fp32", isa;
  bool json = false;
};

po::options_description bench_adam_options(AdamFlags& f) {
  po::options_description desc(
      "tierzero bench adam: the CPU Adam as training runs it on offloaded optimizer states: for the model's\n"
      "groups, on the host tier, tensor by tensor (weight decay per tensor) in sub-groups, with the working-\n"
      "copy write, at the OpenMP thread count of the process (OMP_NUM_THREADS, as the trainer uses).\n"
      "Per working dtype: ms per step (median), GB/s moved = params x (28 + working bytes) / time, and the\n"
      "fraction of the limit: the same calls with the CPU Adam's memory pass (the same loads, stores and\n"
      "working write, no arithmetic), run back to back with each step; the fraction is the median of the\n"
      "per-repetition ratios. #wrong counts sampled elements that differ in any bit from the scalar\n"
      "reference (the run fails if any does). TZ_CPU_ADAM_ISA or --isa picks the vector path.\n"
      "With --optimizer-states or --master-weights other than fp32 (issue 36), the chosen formats run beside\n"
      "the fp32 step (with its bf16 working write), interleaved: ms per step, ns and bytes per parameter, the\n"
      "speed-up over fp32 (median of the per-repetition ratios), and #wrong against the scalar definition.\n\nflags");
  add_model_flags(desc, f.mf);
  desc.add_options()
      ("help,h", "print this help")
      ("working", po::value(&f.working)->default_value(f.working),
       "working dtypes, comma-separated: fp32, bf16")
      ("sub-group-size", po::value(&f.sub_group)->default_value(f.sub_group),
       "elements per optimizer sub-group, rounded down to a multiple of 524,288 as training rounds it")
      ("reps", po::value(&f.o.reps)->default_value(f.o.reps),
       "timed repetitions of each pass (median reported)")
      ("warmup-reps", po::value(&f.o.warmup_reps)->default_value(f.o.warmup_reps),
       "untimed repetitions first")
      ("optimizer-states", po::value(&f.states)->default_value(f.states),
       "Adam's moments: fp32, bf16 or int8 (blockwise; tensors under 4096 elements keep fp32)")
      ("master-weights", po::value(&f.master)->default_value(f.master), "the master: fp32 or bf16-sr")
      ("isa", po::value(&f.isa), "avx512, avx2 or scalar: the CPU Adam's path (as TZ_CPU_ADAM_ISA)")
      ("json", po::bool_switch(&f.json), "print one JSON object instead of the table");
  return desc;
}

int bench_adam(const std::vector<std::string>& args) {
  AdamFlags f;
  po::options_description desc = bench_adam_options(f);
  AdamBenchOptions& o = f.o;
  const ModelFlags& mf = f.mf;
  const std::string &sub_group = f.sub_group, &working = f.working;
  const bool& json = f.json;
  po::variables_map vm;
  if (!parse_args(args, desc, vm, "bench adam")) return 0;
  o.model_name = resolve_model_name(mf);
  o.model = resolve_model(mf);
  o.sub_group_size = parse_count("sub-group-size", sub_group);
  o.states = parse_moment_format(f.states, "--optimizer-states");
  o.master = parse_master_format(f.master, "--master-weights");
  if (!f.isa.empty()) {
    // The CPU Adam reads its path once, from TZ_CPU_ADAM_ISA: --isa is that variable for this process,
    // checked here (a path this CPU lacks is refused naming the flag) and set before any Adam runs.
    select_cpu_adam_isa(f.isa.c_str(), "--isa");
    TZ_SYS_CHECK(setenv("TZ_CPU_ADAM_ISA", f.isa.c_str(), 1), "setenv TZ_CPU_ADAM_ISA");
    TZ_CHECK(cpu_adam_isa() == f.isa, "--isa ", f.isa, ": the CPU Adam's path was chosen before the flag was read");
  }
  o.working.clear();
  std::stringstream list(working);
  for (std::string d; std::getline(list, d, ',');) {
    const DType t = parse_compute_dtype(d);
    TZ_CHECK(t != DType::f16, "--working: fp32 or bf16 (fp16 writes the same bytes as bf16)");
    o.working.push_back(t);
  }
  auto result = run_adam_bench(o, json);
  if (json) std::cout << result.dump() << "\n";
  for (const auto& row : result["rows"])
    if (row["wrong"].get<long long>() != 0) return 1;  // wrong bits fail the run
  return 0;
}

struct IoFlags {
  IoBenchOptions o;
  std::string size = "4G", block = "1M", buffer = "256M", checksums = "on";
  bool json = false;
};

po::options_description bench_io_options(IoFlags& f) {
  po::options_description desc(
      "tierzero bench io: sequential write then read of one NVMe-store shard (io_uring, O_DIRECT, pinned\n"
      "registered buffers, per-block XXH3 checksums), GB/s each (1e9 bytes/s), no fsync. Compare with\n"
      "fio --ioengine=io_uring --direct=1 at the same --bs/--iodepth (perf/scripts/bench_io_vs_fio.sh).\n\nflags");
  desc.add_options()
      ("help,h", "print this help")
      ("path", po::value(&f.o.path)->default_value(f.o.path),
       "directory for the store's files (removed afterwards)")
      ("size", po::value(&f.size)->default_value(f.size), "shard size, e.g. 4G")
      ("block-size", po::value(&f.block)->default_value(f.block),
       "aio.block_size: bytes per request, e.g. 1M, 128K")
      ("queue-depth", po::value(&f.o.queue_depth)->default_value(f.o.queue_depth),
       "aio.queue_depth: requests in flight")
      ("checksums", po::value(&f.checksums)->default_value(f.checksums), "on or off: XXH3-64 per block")
      ("buffer", po::value(&f.buffer)->default_value(f.buffer), "pinned staging arena per direction")
      ("json", po::bool_switch(&f.json), "print one JSON object instead of the table");
  return desc;
}

int bench_io(const std::vector<std::string>& args) {
  IoFlags f;
  po::options_description desc = bench_io_options(f);
  IoBenchOptions& o = f.o;
  const std::string &size = f.size, &block = f.block, &buffer = f.buffer, &checksums = f.checksums;
  const bool& json = f.json;
  po::variables_map vm;
  if (!parse_args(args, desc, vm, "bench io")) return 0;
  o.size = parse_bytes(size);
  o.block_size = parse_bytes(block);
  o.buffer_bytes = parse_bytes(buffer);
  TZ_CHECK(checksums == "on" || checksums == "off", "--checksums must be on or off, not '", checksums, "'");
  o.checksums = checksums == "on" ? Checksums::on : Checksums::off;
  auto result = run_io_bench(o, json);
  if (json) std::cout << result.dump() << "\n";
  return result["wrong"].get<std::uint64_t>() == 0 ? 0 : 1;  // wrong bytes fail the run
}

struct CalibrateFlags {
  CalibrateOptions o;
  ModelFlags mf{"gpt2"};
  std::string out = local_hardware_path(), nvme_bytes = "1G";
  bool memory_only = false, network = false;
};

po::options_description bench_calibrate_options(CalibrateFlags& f) {
  po::options_description desc(
      "tierzero bench calibrate: measure this machine's rates for `tierzero plan --hardware local` (compute "
      "of a training step per dtype, CPU Adam, host copies, each NUMA node's memory, NVMe with --nvme-path, "
      "collectives under mpirun)\n\nflags");
  add_model_flags(desc, f.mf);
  desc.add_options()("help,h", "print this help")(
      "micro-batch", po::value(&f.o.micro_batch)->default_value(f.o.micro_batch), "sequences per step")(
      "nvme-path", po::value(&f.o.nvme_path)->default_value(""), "measure the NVMe store in this folder")(
      "nvme-bytes", po::value(&f.nvme_bytes)->default_value(f.nvme_bytes), "bytes written then read there")(
      "memory-only", po::bool_switch(&f.memory_only),
      "measure only the memory lines outside the plan's buffers and add them to the existing --out file, "
      "keeping its rates: run once more under mpirun -np N for each world size the plan should know the "
      "communication temporaries at (docs/planning.md#outside-the-buffers)")(
      "network", po::bool_switch(&f.network),
      "measure only the collectives between nodes and add them to the existing --out file as its network "
      "rates "
      "(\"network\", and inter_gbs), keeping the rest: run under mpirun with one rank on each of 2 or more "
      "nodes (docs/planning.md#between-nodes-bench-calibrate---network)")(
      "out",
      po::value(&f.out)->default_value(f.out, "$TIERZERO_HARDWARE or ~/.config/tierzero/hardware.json"),
      "the hardware file to write (rank 0), where --hardware local reads it: by default $TIERZERO_HARDWARE, "
      "else "
      "$XDG_CONFIG_HOME/tierzero/hardware.json, else ~/.config/tierzero/hardware.json");
  return desc;
}

int bench_calibrate(const std::vector<std::string>& args) {
  CalibrateFlags f;
  po::options_description desc = bench_calibrate_options(f);
  CalibrateOptions& o = f.o;
  const ModelFlags& mf = f.mf;
  const std::string &out = f.out, &nvme_bytes = f.nvme_bytes;
  po::variables_map vm;
  if (!parse_args(args, desc, vm, "bench calibrate")) return 0;
  o.model = resolve_model(mf);
  o.model_name = resolve_model_name(mf);
  o.seq_len = mf.seq_len;
  o.nvme_bytes = parse_bytes(nvme_bytes);
  const WorldInfo w = discover_world();
  // --memory-only adds to the file the rates are in: refused before anything is made or measured.
  TZ_CHECK(!f.memory_only || std::filesystem::is_regular_file(out), "--memory-only adds to an existing hardware file, and ",
           out, " is not one; run `tierzero bench calibrate --out ", out, "` first");
  TZ_CHECK(!(f.memory_only && f.network),
           "--memory-only and --network each add one measurement to the file: give one");
  TZ_CHECK(!f.network || std::filesystem::is_regular_file(out),
           "--network adds to an existing hardware file, and ", out,
           " is not one; run `tierzero bench calibrate --out ", out, "` on one node first");
  // Between nodes means one rank on each: ranks sharing a node would measure its shared memory.
  TZ_CHECK(
      !f.network || (w.size >= 2 && w.local_size == 1),
      "--network measures the collectives between nodes with one "
      "rank on each, and this is ",
      w.size == 1 ? "one process" : std::to_string(w.local_size) + " ranks on node " + w.host,
      "; start it under mpirun with one rank per node (mpirun -np N --map-by ppr:1:node, or --host a:1,b:1)");
  {  // the file's folder made and the target checked before the measurements, not after (on every rank: alike)
    check_outside_checkpoint_trees(out, "--out");
    const std::filesystem::path parent = std::filesystem::path(out).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent);
    check_planned_outputs({{"--out", out, PlannedKind::file}});
  }
  std::unique_ptr<Communicator> comm = w.source == "single" ? nullptr : make_mpi_world();
  Hardware h;
  if (f.network) {
    h = load_hardware(out);  // on every rank before measuring: a malformed file fails them alike
    // The transport's temporaries first, before the rates' larger messages have made its buffers resident,
    // in training's default pieces, as the node's are measured.
    const std::size_t piece = ZeroOptions{}.comm_piece_bytes;
    const double between = measure_comm_temporaries(*comm, piece);
    if (between >= 0) {
      h.memory.set_comm_piece_bytes(double(piece));
      h.memory.comm_between_nodes = between;
    }
    h.network = measure_collective_rates(dynamic_cast<MpiCommunicator&>(*comm));
    h.inter_gbs = h.network.all_reduce_gbs;
    if (comm->rank() == 0) {
      char grew[96] = "not measured (the peak resident set cannot be reset here)";
      if (between >= 0) std::snprintf(grew, sizeof grew, "%.2f MiB per rank", between / (1 << 20));
      std::printf(
          "network across %d nodes: reduce-scatter %.3g, all-gather %.3g, all-reduce %.3g GB/s bus, latency "
          "%.0f us; communication temporaries %s\n",
          h.network.nodes, h.network.reduce_scatter_gbs, h.network.all_gather_gbs, h.network.all_reduce_gbs,
          h.network.latency_us, grew);
    }
  } else if (f.memory_only) {
    h = load_hardware(out);  // on every rank before measuring: a malformed file fails them alike
    const MemoryLines m = measure_memory_lines(o, comm.get());
    if (!m.comm.empty()) {
      h.memory.set_comm_piece_bytes(m.comm_piece_bytes);
      for (const CommTemporaries& c : m.comm) h.memory.add_comm(c.ranks, c.bytes);
    }
    h.memory.libraries = m.libraries;
    h.memory.products = m.products;
    h.memory.heap = m.heap;
  } else {
    h = calibrate(o, comm.get(), false);
  }
  if (!comm || comm->rank() == 0) {
    const std::string text = h.to_json().dump(1) + "\n";
    AtomicOutputFile f(out, "hardware file");
    f.write(text.data(), text.size());
    f.commit();
    std::printf("wrote %s%s\n", out.c_str(),
                comm ? "" : " (one process: no collective rates; run under mpirun -np 2 to measure them)");
  }
  return 0;
}

}  // namespace

struct NumaFlags {
  NumaBenchOptions o;
  std::string bytes = "256M";
  bool json = false;
};

po::options_description bench_numa_options(NumaFlags& f) {
  po::options_description desc(
      "tierzero bench numa: each NUMA node's memory as a numa:N tier uses it. Per node, with buffers bound\n"
      "to the node and the OpenMP team on the node's nearest CPUs (as the CPU Adam runs there): read and\n"
      "write GB/s of a sum and a fill (the limit, and what `bench calibrate` records per node), and the CPU\n"
      "Adam's GB/s (32 bytes per element) with master, m and v on the node and the gradient and working copy\n"
      "in ordinary memory, next to the same Adam all in ordinary memory. Medians; prints the ISA.\n\nflags");
  desc.add_options()
      ("help,h", "print this help")
      ("bytes", po::value(&f.bytes)->default_value(f.bytes),
       "stream buffer per node (less where the node has less than 4x free), e.g. 1G")
      ("adam-elements", po::value(&f.o.adam_elements)->default_value(f.o.adam_elements),
       "optimizer elements of the Adam run per node (3 x 4 bytes each on the node)")
      ("reps", po::value(&f.o.reps)->default_value(f.o.reps), "timed repetitions (medians), after one untimed")
      ("json", po::bool_switch(&f.json), "print one JSON object instead of the table");
  return desc;
}

int bench_numa(const std::vector<std::string>& args) {
  NumaFlags f;
  po::options_description desc = bench_numa_options(f);
  po::variables_map vm;
  if (!parse_args(args, desc, vm, "bench numa")) return 0;
  f.o.stream_bytes = parse_bytes(f.bytes);
  TZ_CHECK(f.o.stream_bytes >= (std::size_t(16) << 20) && f.o.stream_bytes <= (std::size_t(1) << 40),
           "--bytes must be from 16M to 1T, got ", f.bytes);
  TZ_CHECK(f.o.adam_elements >= 1 && f.o.adam_elements <= (std::size_t(1) << 36), "--adam-elements must be from 1 to 2^36");
  TZ_CHECK(f.o.reps >= 1 && f.o.reps <= 1000, "--reps must be from 1 to 1000, got ", f.o.reps);
  const nlohmann::json r = run_numa_bench(f.o, f.json);
  if (f.json) std::cout << r.dump() << "\n";
  return r["rows"].empty() ? 77 : 0;  // no NUMA node here: skipped
}

std::vector<FlagTable> bench_flag_tables() {
  return {flag_table("bench step", bench_step_options),
          flag_table("bench comm", bench_comm_options),
          flag_table("bench adam", bench_adam_options),
          flag_table("bench io", bench_io_options),
          flag_table("bench offload", bench_offload_options),
          flag_table("bench numa", bench_numa_options),
          flag_table("bench calibrate", bench_calibrate_options)};
}

int bench_command(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::printf("usage: tierzero bench <name> [flags]\n\nbenchmarks:\n  step   one training step: ms, tokens/s, "
                "GFLOP/s next to the matmul rate\n  comm   collective bandwidth (all_reduce, reduce_scatter, "
                "all_gather) next to plain MPI; run under mpirun\n"
                "  adam   CPU Adam: ms and GB/s per step next to the access-pattern limit\n"
                "  io     NVMe store sequential write/read GB/s (io_uring, O_DIRECT, checksums) next to fio\n"
                "  offload  optimizer step over an NVMe shard, pipelined, vs max(IO alone, Adam alone)\n"
                "  numa   each NUMA node's read/write GB/s and the CPU Adam on states there, vs host memory\n"
                "  gpu-matmul     cuda gemm on a gpt2-xl step's shapes: TFLOP/s next to the bf16 dense peak\n"
                "  gpu-attention  cuda attention forward + backward: TFLOP/s next to the bf16 dense peak\n"
                "  gpu-copy       host <-> device GB/s, pinned and pageable, next to the PCIe link\n"
                "  mfu    a training run's MFU from its --metrics file\n"
                "  calibrate  this machine's rates, for tierzero plan --hardware local\n"
                "(the gpu-* benchmarks exit 77, skipped, where the cuda device cannot be made)\n");
    return args.empty() ? 2 : 0;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "step") return bench_step(rest);
  if (args[0] == "calibrate") return bench_calibrate(rest);
  if (args[0] == "comm") return bench_comm(rest);
  if (args[0] == "adam") return bench_adam(rest);
  if (args[0] == "io") return bench_io(rest);
  if (args[0] == "offload") return bench_offload(rest);
  if (args[0] == "numa") return bench_numa(rest);
  if (args[0] == "gpu-matmul") return bench_gpu_matmul(rest);
  if (args[0] == "gpu-attention") return bench_gpu_attention(rest);
  if (args[0] == "gpu-copy") return bench_gpu_copy(rest);
  if (args[0] == "mfu") return bench_mfu(rest);
  TZ_FAIL("unknown benchmark '", args[0],
          "': use step, comm, adam, io, offload, numa, calibrate, gpu-matmul, gpu-attention, gpu-copy or mfu (see tierzero "
          "bench --help)");
}

}  // namespace tz
