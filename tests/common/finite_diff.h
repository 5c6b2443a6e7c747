// Central finite differences in double, for checking backward kernels: the gradient of a scalar
// loss L(x) (a random linear functional of an op's output, computed by a double reference).
#pragma once

#include <cmath>
#include <cstddef>
#include <functional>
#include <vector>

namespace tz::test {

// dL/dx_i ~ (L(x + h e_i) - L(x - h e_i)) / 2h. With smooth double references and h = 1e-5
// (about cbrt(double eps) times the O(1) inputs) the truncation error O(h^2 L''') and the
// cancellation error O(eps |L| / h) are both below 1e-9, far under the fp32 kernels' error.
inline std::vector<double> central_differences(const std::function<double(const std::vector<double>&)>& loss,
                                               std::vector<double> x, double h = 1e-5) {
  std::vector<double> grad(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double xi = x[i];
    x[i] = xi + h;
    const double up = loss(x);
    x[i] = xi - h;
    const double down = loss(x);
    x[i] = xi;
    grad[i] = (up - down) / (2 * h);
  }
  return grad;
}

// sum_i w[i] * out[i]: the linear functional whose gradient with respect to out is w, so a
// backward op fed dout = w must return dL/dinput.
inline double dot(const std::vector<double>& w, const std::vector<double>& out) {
  double s = 0;
  for (std::size_t i = 0; i < w.size(); ++i) s += w[i] * out[i];
  return s;
}

}  // namespace tz::test
