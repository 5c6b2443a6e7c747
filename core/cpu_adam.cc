// CPU Adam dispatch: chooses the instruction-set path once, derives the step's constants, and splits
// the step into fixed-size chunks over the OpenMP team, each handed to that path's kernel.
#include "core/cpu_adam.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/error.h"
#include "core/cpu_adam_kernels.h"

namespace tz {
namespace {

using namespace cpu_adam_detail;

// 64 Ki elements: 1 MiB of p, m, v, g per chunk, large enough that the per-chunk call costs nothing
// (16 Ki to 1 Mi elements measured alike at 100M params) and small enough to split shards of a few
// million elements over the team. A step that fits in one chunk runs on the calling thread: forking
// the team would cost more than the work.
constexpr std::size_t kChunk = std::size_t(1) << 16;

WorkingOut working_out(const void* working, DType t) {
  if (!working) return WorkingOut::none;
  switch (t) {
    case DType::f32:
      return WorkingOut::f32;
    case DType::bf16:
      return WorkingOut::bf16;
    case DType::f16:
      return WorkingOut::f16;
    default:
      TZ_FAIL("CPU Adam cannot write working params as ", dtype_name(t), ": use fp32, bf16 or fp16");
  }
}

AdamKernel adam_kernel(CpuAdamIsa isa) {
  switch (isa) {
    case CpuAdamIsa::avx512:
      return adamw_avx512;
    case CpuAdamIsa::avx2:
      return adamw_avx2;
    case CpuAdamIsa::scalar:
      break;
  }
  return adamw_scalar;
}

MemoryPassKernel memory_pass_kernel(CpuAdamIsa isa) {
  switch (isa) {
    case CpuAdamIsa::avx512:
      return memory_pass_avx512;
    case CpuAdamIsa::avx2:
      return memory_pass_avx2;
    case CpuAdamIsa::scalar:
      break;
  }
  return memory_pass_scalar;
}

// Calls body(begin, count) for each chunk of [0, n), in parallel when there is more than one.
template <typename Body>
void for_each_chunk(std::size_t n, Body&& body) {
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
  if (chunks <= 1) {
    if (n) body(std::size_t(0), n);
    return;
  }
  // Static schedule: each thread walks one contiguous run of chunks, which keeps its streams
  // sequential for the prefetchers.
#pragma omp parallel for schedule(static)
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t begin = c * kChunk;
    body(begin, std::min(kChunk, n - begin));
  }
}

void check_supported(CpuAdamIsa isa) {
  TZ_CHECK(cpu_adam_isa_supported(isa), "this CPU cannot run the ", cpu_adam_isa_name(isa), " CPU Adam path");
}

}  // namespace

std::string_view cpu_adam_isa_name(CpuAdamIsa isa) {
  switch (isa) {
    case CpuAdamIsa::scalar:
      return "scalar";
    case CpuAdamIsa::avx2:
      return "avx2";
    case CpuAdamIsa::avx512:
      return "avx512";
  }
  return "?";
}

bool cpu_adam_isa_supported(CpuAdamIsa isa) {
  // __builtin_cpu_supports also checks that the OS saves the wider registers (XCR0), not only CPUID.
  switch (isa) {
    case CpuAdamIsa::scalar:
      return true;
    case CpuAdamIsa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("f16c");
    case CpuAdamIsa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  }
  return false;
}

CpuAdamIsa select_cpu_adam_isa(const char* requested, std::string_view source) {
  if (!requested || !*requested) {
    if (cpu_adam_isa_supported(CpuAdamIsa::avx512)) return CpuAdamIsa::avx512;
    if (cpu_adam_isa_supported(CpuAdamIsa::avx2)) return CpuAdamIsa::avx2;
    return CpuAdamIsa::scalar;
  }
  const std::string_view want(requested);
  for (CpuAdamIsa isa : {CpuAdamIsa::avx512, CpuAdamIsa::avx2, CpuAdamIsa::scalar}) {
    if (want != cpu_adam_isa_name(isa)) continue;
    TZ_CHECK(cpu_adam_isa_supported(isa), source, " asks for the ", want,
             " CPU Adam path, but this CPU lacks ",
             isa == CpuAdamIsa::avx512 ? "one of avx512f/bw/vl/dq" : "one of avx2/fma/f16c");
    return isa;
  }
  TZ_FAIL(source, " '", want, "' is not a CPU Adam path: use avx512, avx2 or scalar");
}

CpuAdamIsa cpu_adam_isa_choice() {
  // The one environment read outside launch/: a test and benchmark override of what the hardware
  // offers, not a training setting. Read once, so the path cannot change between steps.
  static const CpuAdamIsa isa = select_cpu_adam_isa(std::getenv("TZ_CPU_ADAM_ISA"));
  return isa;
}

std::string cpu_adam_isa() { return std::string(cpu_adam_isa_name(cpu_adam_isa_choice())); }

math::AdamCoeffs adam_coeffs(const AdamStep& s) {
  TZ_CHECK(s.step >= 1, "Adam step is 1-based (bias correction divides by 1 - beta^step), got ", s.step);
  // The bias corrections in double, rounded once.
  return math::AdamCoeffs{s.lr,
                          s.beta1,
                          s.beta2,
                          s.eps,
                          s.weight_decay,
                          s.grad_scale,
                          float(double(s.lr) / (1.0 - std::pow(double(s.beta1), s.step))),
                          float(1.0 / std::sqrt(1.0 - std::pow(double(s.beta2), s.step)))};
}

namespace cpu_adam_detail {

Consts consts_for(const AdamStep& s) {
  Consts k;
  k.c = adam_coeffs(s);
  // The same float operations math::adamw_update performs on these hyper-parameters; this file is
  // built with -ffp-contract=off so lr * wd is rounded before the subtraction, as there.
  k.one_minus_beta1 = 1.0f - k.c.beta1;
  k.one_minus_beta2 = 1.0f - k.c.beta2;
  k.decay = 1.0f - k.c.lr * k.c.weight_decay;
  return k;
}

}  // namespace cpu_adam_detail

void cpu_adamw(float* p, float* m, float* v, const float* g, std::size_t n, const AdamStep& s, void* working,
               DType working_type) {
  cpu_adamw_with(cpu_adam_isa_choice(), p, m, v, g, n, s, working, working_type);
}

void cpu_adamw_with(CpuAdamIsa isa, float* p, float* m, float* v, const float* g, std::size_t n,
                    const AdamStep& s, void* working, DType working_type) {
  check_supported(isa);
  const WorkingOut out = working_out(working, working_type);
  const Consts k = consts_for(s);
  const AdamKernel kernel = adam_kernel(isa);
  const std::size_t wbytes = out == WorkingOut::none ? 0 : dtype_size(working_type);
  for_each_chunk(n, [&](std::size_t begin, std::size_t count) {
    void* w = out == WorkingOut::none ? nullptr : static_cast<char*>(working) + begin * wbytes;
    kernel(k, p + begin, m + begin, v + begin, g + begin, count, w, out);
  });
}

void cpu_adam_memory_pass(CpuAdamIsa isa, float* p, float* m, float* v, const float* g, std::size_t n,
                          void* working, DType working_type) {
  check_supported(isa);
  const MemoryPassKernel kernel = memory_pass_kernel(isa);
  const WorkingOut out = working_out(working, working_type);
  const std::size_t es = out == WorkingOut::f32 ? 4 : 2;
  for_each_chunk(n, [&](std::size_t begin, std::size_t count) {
    void* w = working ? static_cast<char*>(working) + begin * es : nullptr;
    kernel(p + begin, m + begin, v + begin, g + begin, count, w, out);
  });
}

}  // namespace tz
