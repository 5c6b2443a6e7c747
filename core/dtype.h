// Low-precision number formats (bf16, fp16) and their round-to-nearest-even conversions, shared by the
// CPU and CUDA backends so host tests cover exactly the arithmetic the GPU kernels run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#if defined(__CUDACC__)
#define TZ_HOST_DEVICE __host__ __device__
#else
#define TZ_HOST_DEVICE
#endif

namespace tz {

// Element types a buffer or a kernel argument may hold.
enum class DType : std::uint8_t { f32, bf16, f16, i32, u16, f64 };  // f64: scalar reductions (norms, losses)

TZ_HOST_DEVICE inline std::uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

TZ_HOST_DEVICE inline float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// bfloat16: the top 16 bits of an IEEE float.
struct bf16 {
  std::uint16_t bits;
};

// IEEE half precision.
struct fp16 {
  std::uint16_t bits;
};

TZ_HOST_DEVICE inline float bf16_to_float(bf16 h) { return bits_float(std::uint32_t(h.bits) << 16); }

// Round to nearest, ties to even; NaN stays a (quiet) NaN of the same sign, Inf stays Inf.
TZ_HOST_DEVICE inline bf16 float_to_bf16(float f) {
  std::uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{std::uint16_t((u >> 16) | 0x0040u)};
  std::uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;
  return bf16{std::uint16_t(u >> 16)};
}

TZ_HOST_DEVICE inline float fp16_to_float(fp16 h) {
  std::uint32_t sign = std::uint32_t(h.bits & 0x8000u) << 16;
  std::uint32_t exp = (h.bits >> 10) & 0x1fu;
  std::uint32_t man = h.bits & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (man << 13));  // Inf or NaN
  if (exp == 0) {
    if (man == 0) return bits_float(sign);
    // Subnormal: value = man * 2^-24, exact in float.
    float v = float(man) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
}

// Round to nearest, ties to even, with overflow to Inf and gradual underflow to subnormals.
TZ_HOST_DEVICE inline fp16 float_to_fp16(float f) {
  std::uint32_t u = float_bits(f);
  std::uint16_t sign = std::uint16_t((u >> 16) & 0x8000u);
  std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return fp16{std::uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu))};  // NaN
  if (a >= 0x477ff000u) return fp16{std::uint16_t(sign | 0x7c00u)};  // rounds to >= 65520: Inf
  if (a < 0x38800000u) {
    // Below the smallest normal (2^-14): subnormal or zero. Shift the full mantissa into place
    // and round the dropped bits to nearest even.
    if (a < 0x33000000u) return fp16{sign};  // below half the smallest subnormal: rounds to 0
    std::uint32_t exp = a >> 23;
    std::uint32_t man = (a & 0x7fffffu) | 0x800000u;
    std::uint32_t shift = 126u - exp;  // 113 - exp + 13
    std::uint32_t half = 1u << (shift - 1);
    std::uint32_t rest = man & ((1u << shift) - 1u);
    std::uint32_t r = man >> shift;
    if (rest > half || (rest == half && (r & 1u))) ++r;
    return fp16{std::uint16_t(sign | r)};
  }
  std::uint32_t lsb = (a >> 13) & 1u;
  a += 0xfffu + lsb;
  return fp16{std::uint16_t(sign | ((a - 0x38000000u) >> 13))};
}

template <typename T>
TZ_HOST_DEVICE inline float to_float(T x);
template <>
TZ_HOST_DEVICE inline float to_float<float>(float x) { return x; }
template <>
TZ_HOST_DEVICE inline float to_float<bf16>(bf16 x) { return bf16_to_float(x); }
template <>
TZ_HOST_DEVICE inline float to_float<fp16>(fp16 x) { return fp16_to_float(x); }

template <typename T>
TZ_HOST_DEVICE inline T from_float(float x);
template <>
TZ_HOST_DEVICE inline float from_float<float>(float x) { return x; }
template <>
TZ_HOST_DEVICE inline bf16 from_float<bf16>(float x) { return float_to_bf16(x); }
template <>
TZ_HOST_DEVICE inline fp16 from_float<fp16>(float x) { return float_to_fp16(x); }

template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() { return DType::f32; }
template <>
constexpr DType dtype_of<bf16>() { return DType::bf16; }
template <>
constexpr DType dtype_of<fp16>() { return DType::f16; }
template <>
constexpr DType dtype_of<std::int32_t>() { return DType::i32; }
template <>
constexpr DType dtype_of<std::uint16_t>() { return DType::u16; }
template <>
constexpr DType dtype_of<double>() { return DType::f64; }

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::bf16:
    case DType::f16:
    case DType::u16:
      return 2;
    case DType::f64:
      return 8;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "fp32";
    case DType::bf16: return "bf16";
    case DType::f16: return "fp16";
    case DType::i32: return "int32";
    case DType::u16: return "uint16";
    case DType::f64: return "fp64";
  }
  return "?";
}

}  // namespace tz
