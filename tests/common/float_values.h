// Test values written as floats in every element type the collectives move: fp32, bf16 and fp16 through
// core/dtype.h's conversions, and fp64 by a plain cast (the values tests use are small integers, exact
// in each).
#pragma once

#include <type_traits>

#include "core/dtype.h"

namespace tz::test {

template <typename T>
T from_f(float v) {
  if constexpr (std::is_same_v<T, double>)
    return double(v);
  else
    return from_float<T>(v);
}

template <typename T>
float to_f(T x) {
  if constexpr (std::is_same_v<T, double>)
    return float(x);
  else
    return to_float(x);
}

}  // namespace tz::test
