// Parameters stored in a working dtype (fp32, bf16 or fp16) for backend tests, together with the
// exact values a kernel reads from them, so double references use the same rounded inputs.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/dtype.h"

namespace tz::test {

class TypedParams {
 public:
  TypedParams(const std::vector<float>& values, DType dtype) : dtype_(dtype) {
    for (float v : values) {
      switch (dtype) {
        case DType::f32:
          f32_.push_back(v);
          values_.push_back(v);
          break;
        case DType::bf16:
          bf16_.push_back(float_to_bf16(v));
          values_.push_back(bf16_to_float(bf16_.back()));
          break;
        case DType::f16:
          fp16_.push_back(float_to_fp16(v));
          values_.push_back(fp16_to_float(fp16_.back()));
          break;
        default:
          break;
      }
    }
  }

  CView view() const {
    switch (dtype_) {
      case DType::bf16:
        return cview(bf16_.data());
      case DType::f16:
        return cview(fp16_.data());
      default:
        return cview(f32_.data());
    }
  }
  // The values as the kernel sees them (after rounding to the dtype), in double.
  const std::vector<double>& values() const { return values_; }
  DType dtype() const { return dtype_; }

 private:
  DType dtype_;
  std::vector<float> f32_;
  std::vector<bf16> bf16_;
  std::vector<fp16> fp16_;
  std::vector<double> values_;
};

inline std::string dtype_label(DType t) { return std::string(dtype_name(t)); }

inline constexpr DType kParamDtypes[] = {DType::f32, DType::bf16, DType::f16};

}  // namespace tz::test
