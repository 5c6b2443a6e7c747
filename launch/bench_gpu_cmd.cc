// The GPU benchmarks' flags, the device they run on (cuda, or cpu to test their logic at small sizes)
// and the limits they print next to their results: the GPU's name, peak and PCIe link from the driver.
#include "launch/bench_gpu_cmd.h"

#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "core/device.h"
#include "core/error.h"
#include "core/memory_budget.h"
#include "launch/flag_table.h"
#include "launch/gpu_probe.h"
#include "launch/model_options.h"
#include "launch/parse_args.h"
#include "perf/gpu_attention_bench.h"
#include "perf/gpu_copy_bench.h"
#include "perf/gpu_matmul_bench.h"
#include "perf/train_mfu.h"

namespace po = boost::program_options;

namespace tz {
namespace {

// Flags every GPU benchmark takes.
struct CommonFlags {
  std::string device = "cuda";
  double peak_tflops = 0;
  bool json = false;
  int warmup = -1, iters = -1, rounds = -1;  // -1: the benchmark's default
};

void add_common(po::options_description& desc, CommonFlags& f) {
  desc.add_options()("help,h", "print this help")(
      "device", po::value(&f.device)->default_value(f.device),
      "cuda, or cpu (the same code on the cpu backend, to test the benchmark at small sizes)")(
      "peak-tflops", po::value(&f.peak_tflops)->default_value(0.0),
      "the bf16 dense peak to report against (0: from the GPU's name, perf/gpu_limits.cc)")(
      "warmup", po::value(&f.warmup)->default_value(-1), "untimed launches first (-1: the default)")(
      "iters", po::value(&f.iters)->default_value(-1), "launches per timed round (-1: the default)")(
      "rounds", po::value(&f.rounds)->default_value(-1),
      "timed rounds; the median is reported (-1: the default)")("json", po::bool_switch(&f.json),
                                                                "print one JSON object instead of the table");
}

template <typename Options>
void apply_common(const CommonFlags& f, Options& o) {
  if (f.warmup >= 0) o.warmup = f.warmup;
  if (f.iters >= 0) o.iters = f.iters;
  if (f.rounds >= 0) o.rounds = f.rounds;
}

// The first GPU the driver lists (the one a one-process run computes on, CUDA_VISIBLE_DEVICES applied).
GpuIdentity first_gpu() {
  const GpuReport r = probe_gpus();
  GpuIdentity g;
  if (r.gpus.empty()) return g;
  g.name = r.gpus[0].name;
  g.pci_bus_id = r.gpus[0].pci_bus_id;
  g.cc_major = r.gpus[0].cc_major;
  g.cc_minor = r.gpus[0].cc_minor;
  g.memory_bytes = r.gpus[0].memory_bytes;
  return g;
}

GpuLimits limits_for(DeviceKind kind, double peak_flag) {
  GpuLimits l;
  if (!device_traits(kind).unified_memory) {  // a device of its own: the GPU, its peak and its link
    l.gpu = first_gpu();
    l.bf16_peak = bf16_dense_peak(l.gpu.name);
    l.link = pcie_link(l.gpu.pci_bus_id);
  } else {
    l.bf16_peak = {0, "the cpu device: no tensor-core peak (pass --peak-tflops to compare with one)"};
  }
  if (peak_flag > 0) l.bf16_peak = {peak_flag, "--peak-tflops"};
  return l;
}

// The device, or null after saying why it cannot be made (then the caller exits kBenchSkipped).
std::unique_ptr<Device> open_device(const std::string& bench, const CommonFlags& f, DeviceOptions opt = {}) {
  const DeviceKind kind = parse_device_kind(f.device);
  try {
    return make_device(kind, opt);
  } catch (const std::exception& e) {
    const std::string why =
        std::string("the ") + device_kind_name(kind) + " device cannot be made: " + e.what();
    std::fprintf(stderr, "bench %s: skipped: %s\n", bench.c_str(), why.c_str());
    if (f.json)
      std::cout << nlohmann::json{{"bench", bench}, {"skipped", true}, {"reason", why}}.dump() << "\n";
    return nullptr;
  }
}

// Prints the result and turns its #wrong count (or a non-finite result) into the exit status.
int finish(const nlohmann::json& r, const CommonFlags& f) {
  if (f.json) std::cout << r.dump() << "\n";
  if (r.contains("wrong") && r["wrong"].get<long long>() != 0) {
    std::fprintf(stderr, "bench %s: %lld wrong results (see #wrong)\n", r["bench"].get<std::string>().c_str(),
                 r["wrong"].get<long long>());
    return 1;
  }
  if (r.contains("finite") && !r["finite"].get<bool>()) {
    std::fprintf(stderr, "bench %s: a result holds NaN or Inf\n", r["bench"].get<std::string>().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

namespace {

struct MatmulFlags {
  CommonFlags f;
  GpuMatmulOptions o;
  std::string dtype = "bf16";
};

po::options_description bench_gpu_matmul_options(MatmulFlags& g) {
  po::options_description desc(
      "tierzero bench gpu-matmul: Backend::gemm on a gpt2-xl step's products (B x T tokens, forward and the\n"
      "backward's input and weight gradients, with the model's layouts) and a square, fp32 accumulation.\n"
      "Per product: ms per launch, TFLOP/s (2 M N K / time) and the fraction of the card's bf16 dense peak\n"
      "(a datasheet figure by GPU name: perf/gpu_limits.cc); #wrong: sampled elements off a double sum on\n"
      "the host by more than 1e-3 of sum |a b| (checked outside the timed loop). Exit 77 without a "
      "GPU.\n\nflags");
  add_common(desc, g.f);
  desc.add_options()("dtype", po::value(&g.dtype)->default_value(g.dtype), "input dtype: bf16, fp16 or fp32")(
      "tokens", po::value(&g.o.tokens)->default_value(g.o.tokens), "B x T of the step")(
      "n-embd", po::value(&g.o.n_embd)->default_value(g.o.n_embd), "model width")(
      "vocab", po::value(&g.o.vocab)->default_value(g.o.vocab), "padded vocabulary")(
      "square", po::value(&g.o.square)->default_value(g.o.square), "side of the square product");
  return desc;
}

}  // namespace

int bench_gpu_matmul(const std::vector<std::string>& args) {
  MatmulFlags g;
  po::options_description desc = bench_gpu_matmul_options(g);
  const CommonFlags& f = g.f;
  GpuMatmulOptions& o = g.o;
  const std::string& dtype = g.dtype;
  po::variables_map vm;
  if (!parse_args(args, desc, vm, "bench gpu-matmul")) return 0;
  o.dtype = parse_compute_dtype(dtype);
  apply_common(f, o);
  TZ_CHECK(o.tokens >= 1 && o.n_embd >= 1 && o.vocab >= 1 && o.square >= 1,
           "--tokens, --n-embd, --vocab and --square must be positive");
  auto dev = open_device("gpu-matmul", f);
  if (!dev) return kBenchSkipped;
  return finish(run_gpu_matmul_bench(*dev, limits_for(dev->kind(), f.peak_tflops), o, f.json), f);
}

namespace {

struct AttentionFlags {
  CommonFlags f;
  GpuAttentionOptions o;
  std::vector<std::string> shapes;
  std::string math = "bf16";
  std::string act = "auto";
};

po::options_description bench_gpu_attention_options(AttentionFlags& g) {
  po::options_description desc(
      "tierzero bench gpu-attention: Backend::attention_forward and attention_backward (causal; fp32\n"
      "activations, bf16 with cuDNN) at gpt2-xl's shape (B=8 T=1024 C=1600 NH=25) and B=4 T=2048 C=2048\n"
      "NH=16. FLOPs as\n"
      "FlashAttention-2 counts them: forward 4 B NH T^2 hs / 2, backward 2.5x forward; TFLOP/s and the\n"
      "fraction of the card's bf16 dense peak. Exit 77 without a GPU.\n\nflags");
  add_common(desc, g.f);
  desc.add_options()("shape", po::value(&g.shapes)->composing(),
                     "B,T,C,NH (repeatable; replaces the default shapes)")(
      "attention-math", po::value(&g.math)->default_value(g.math),
      "the attention: bf16 (the tensor-core kernels, what --dtype bf16 trains with), fp32 (the SIMT "
      "kernels), or cudnn (cuDNN's fused flash attention, for 16-bit activations; the bf16 kernels where it "
      "cannot run, saying why in one line)")(
      "activation-dtype", po::value(&g.act)->default_value(g.act),
      "qkv, out, dout and dqkv's dtype: fp32, bf16, fp16, or auto (bf16 with --attention-math cudnn, fp32 "
      "otherwise)");
  return desc;
}

}  // namespace

int bench_gpu_attention(const std::vector<std::string>& args) {
  AttentionFlags g;
  po::options_description desc = bench_gpu_attention_options(g);
  const CommonFlags& f = g.f;
  GpuAttentionOptions& o = g.o;
  const std::vector<std::string>& shapes = g.shapes;
  const std::string& math = g.math;
  po::variables_map vm;
  if (!parse_args(args, desc, vm, "bench gpu-attention")) return 0;
  if (!shapes.empty()) {
    o.shapes.clear();
    for (const auto& text : shapes) {
      GpuAttentionShape s;
      char extra = 0;
      TZ_CHECK(std::sscanf(text.c_str(), "%d,%d,%d,%d%c", &s.B, &s.T, &s.C, &s.NH, &extra) == 4, "--shape '",
               text, "': expected B,T,C,NH, e.g. 8,1024,1600,25");
      o.shapes.push_back(s);
    }
  }
  apply_common(f, o);
  TZ_CHECK(math == "bf16" || math == "fp32" || math == "cudnn", "--attention-math '", math,
           "' is not one of bf16, fp32, cudnn");
  TZ_CHECK(g.act == "auto" || g.act == "fp32" || g.act == "bf16" || g.act == "fp16", "--activation-dtype '",
           g.act, "' is not one of auto, fp32, bf16, fp16");
  o.act = g.act == "auto" ? (math == "cudnn" ? DType::bf16 : DType::f32) : parse_compute_dtype(g.act);
  DeviceOptions dopt;
  dopt.attention = attention_kernels(math, o.act);
  auto dev = open_device("gpu-attention", f, dopt);
  if (!dev) return kBenchSkipped;
  nlohmann::json r = run_gpu_attention_bench(*dev, limits_for(dev->kind(), f.peak_tflops), o, f.json);
  r["attention_math"] = math;
  return finish(r, f);
}

namespace {

struct CopyFlags {
  CommonFlags f;
  GpuCopyOptions o;
  std::string bytes = "256M";
};

po::options_description bench_gpu_copy_options(CopyFlags& g) {
  po::options_description desc(
      "tierzero bench gpu-copy: host-to-device and device-to-host copies (Backend::copy_async on one "
      "stream)\n"
      "from pinned host memory (the host tier) and pageable memory, GB/s (1e9 bytes/s) against the PCIe\n"
      "link's bandwidth per direction (read from sysfs through the GPU's bus id, or assumed Gen5 x16, as\n"
      "printed). #wrong: bytes changed by a round trip. Exit 77 without a GPU.\n\nflags");
  add_common(desc, g.f);
  desc.add_options()("bytes", po::value(&g.bytes)->default_value(g.bytes), "bytes per copy, e.g. 256M");
  return desc;
}

}  // namespace

int bench_gpu_copy(const std::vector<std::string>& args) {
  CopyFlags g;
  po::options_description desc = bench_gpu_copy_options(g);
  const CommonFlags& f = g.f;
  GpuCopyOptions& o = g.o;
  const std::string& bytes = g.bytes;
  po::variables_map vm;
  if (!parse_args(args, desc, vm, "bench gpu-copy")) return 0;
  o.bytes = parse_bytes(bytes);
  apply_common(f, o);
  auto dev = open_device("gpu-copy", f);
  if (!dev) return kBenchSkipped;
  return finish(run_gpu_copy_bench(*dev, limits_for(dev->kind(), f.peak_tflops), o, f.json), f);
}

namespace {

struct MfuFlags {
  TrainMfuOptions o;
  ModelFlags mf{"gpt2-xl", 0, 0, 0, 0, 1024};
  bool json = false;
  double peak = 0;
};

po::options_description bench_mfu_options(MfuFlags& g) {
  po::options_description desc(
      "tierzero bench mfu: model FLOP utilisation of a training run from its --metrics file: the median "
      "step\n"
      "over the steps after --skip, tokens/s, model TFLOP/s per device (tokens x (6 N + 12 L C T), N the\n"
      "parameters without wpe, as bench step counts) and its fraction of the bf16 dense peak (from the\n"
      "first GPU's name, or --peak-tflops); it needs no GPU itself. Give the model flags the run was\n"
      "given.\n\nflags");
  add_model_flags(desc, g.mf);
  desc.add_options()("help,h", "print this help")("metrics", po::value(&g.o.metrics)->required(),
                                                  "the JSONL file tierzero train --metrics wrote")(
      "world", po::value(&g.o.world)->default_value(g.o.world), "ranks the run used")(
      "skip", po::value(&g.o.skip)->default_value(g.o.skip),
      "first steps left out (warm-up: allocation, cuBLASLt's heuristics, page faults)")(
      "peak-tflops", po::value(&g.peak)->default_value(0.0), "per-device peak (0: from the GPU's name)")(
      "json", po::bool_switch(&g.json), "print one JSON object");
  return desc;
}

}  // namespace

int bench_mfu(const std::vector<std::string>& args) {
  MfuFlags g;
  po::options_description desc = bench_mfu_options(g);
  TrainMfuOptions& o = g.o;
  const ModelFlags& mf = g.mf;
  const bool& json = g.json;
  const double& peak = g.peak;
  po::variables_map vm;
  if (!parse_args(args, desc, vm, "bench mfu")) return 0;
  o.model = resolve_model(mf);
  o.seq_len = mf.seq_len;
  if (peak > 0) {
    o.peak_tflops = peak, o.peak_source = "--peak-tflops";
  } else {
    const GpuIdentity g = first_gpu();
    const PeakTflops p = bf16_dense_peak(g.name);
    o.peak_tflops = p.tflops;
    o.peak_source = g.name.empty() ? "no GPU found: pass --peak-tflops" : g.name + ": " + p.source;
  }
  nlohmann::json r = train_mfu(o);
  r["model"] = resolve_model_name(mf);
  if (json) {
    std::cout << r.dump() << "\n";
  } else {
    std::printf(
        "bench mfu: %s, %zu steps after %d skipped: %.1f ms/step (forward %.1f, backward %.1f, optimizer "
        "%.1f), "
        "%.0f tokens/s, %.1f TFLOP/s per device",
        o.metrics.c_str(), r["steps_used"].get<std::size_t>(), o.skip, r["ms_per_step"].get<double>(),
        r["ms_forward"].get<double>(), r["ms_backward"].get<double>(), r["ms_optimizer"].get<double>(),
        r["tokens_per_s"].get<double>(), r["tflops_per_device"].get<double>());
    if (o.peak_tflops > 0)
      std::printf(", MFU %.1f%% of %.0f TFLOP/s (%s)\n", 100 * r["mfu"].get<double>(), o.peak_tflops,
                  o.peak_source.c_str());
    else
      std::printf("; no MFU: %s\n", o.peak_source.c_str());
  }
  return 0;
}

std::vector<FlagTable> bench_gpu_flag_tables() {
  return {flag_table("bench gpu-matmul", bench_gpu_matmul_options),
          flag_table("bench gpu-attention", bench_gpu_attention_options),
          flag_table("bench gpu-copy", bench_gpu_copy_options), flag_table("bench mfu", bench_mfu_options)};
}

}  // namespace tz
