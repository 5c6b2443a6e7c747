// Tests Backend::adamw on the cpu backend against a double reference of torch.optim.AdamW
// (decoupled weight decay, bias correction) over several steps, for each working-param dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/backend.h"
#include "core/error.h"
#include "tests/common/compare.h"
#include "tests/common/random.h"
#include "tests/common/stream.h"

namespace tz {
namespace {

// torch.optim.AdamW's single-tensor step, in double: p *= 1 - lr*wd; m = b1 m + (1-b1) g;
// v = b2 v + (1-b2) g^2; p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
// Hyper-parameters are the fp32 values the kernel is given, widened to double.
//
// Alongside, it propagates a bound on how far an fp32 evaluation can drift from it: each fp32
// operation errs by at most u = 2^-24 of its result, so per step m gains <= 3u of its terms' sizes
// (which matters when b1 m and (1-b1) g cancel), v (a sum of positive terms) <= 4u of itself, and p
// <= 3u of |p| and of the update, plus the update's share of m's and v's errors. Older errors decay
// with b1, b2 and 1 - lr*wd.
struct AdamRef {
  std::vector<double> p, m, v;
  std::vector<double> m_size, tol_m, tol_v, tol_p;

  explicit AdamRef(const std::vector<float>& p0)
      : p(p0.begin(), p0.end()),
        m(p0.size()),
        v(p0.size()),
        m_size(p0.size()),
        tol_m(p0.size()),
        tol_v(p0.size()),
        tol_p(p0.size()) {}

  void step(const std::vector<float>& g, const AdamStep& s) {
    const double u = std::ldexp(1.0, -24);
    const double lr = s.lr, b1 = s.beta1, b2 = s.beta2, eps = s.eps, wd = s.weight_decay;
    const double bc1 = 1 - std::pow(b1, s.step), bc2 = 1 - std::pow(b2, s.step);
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double gi = double(g[i]) * s.grad_scale;
      const double decayed = p[i] * (1 - lr * wd);
      m[i] = b1 * m[i] + (1 - b1) * gi;
      m_size[i] = b1 * m_size[i] + (1 - b1) * std::fabs(gi);
      tol_m[i] = b1 * tol_m[i] + 3 * u * m_size[i];
      v[i] = b2 * v[i] + (1 - b2) * gi * gi;
      tol_v[i] = b2 * tol_v[i] + 4 * u * v[i];
      const double denom = std::sqrt(v[i]) / std::sqrt(bc2) + eps;
      const double update = lr / bc1 * m[i] / denom;
      const double rel_v = v[i] > 0 ? tol_v[i] / (2 * v[i]) : 0;
      const double tol_update = lr / bc1 * (tol_m[i] + std::fabs(m[i]) * (rel_v + 6 * u)) / denom;
      p[i] = decayed - update;
      tol_p[i] = tol_p[i] * (1 - lr * wd) + 3 * u * (std::fabs(decayed) + std::fabs(update)) + tol_update;
    }
  }
};

template <typename T>
std::uint16_t bits16(T x) {
  std::uint16_t b;
  std::memcpy(&b, &x, 2);
  return b;
}

// Runs 6 steps from m = v = 0 and checks p, m, v against the reference after every step, and the
// working copy (when there is one) against from_float<W>(p) bitwise.
template <typename W>
void check_adamw(DType working_type, bool with_working) {
  SCOPED_TRACE(with_working ? std::string("working ") + std::string(dtype_name(working_type))
                            : "no working copy");
  auto be = make_cpu_backend();
  test::Rng rng(70);
  const std::size_t n = 1003;  // not a multiple of any vector width
  // Parameters of mixed sizes, including some near zero.
  std::vector<float> p = rng.floats(n, -2, 2);
  for (std::size_t i = 0; i < n; i += 7) p[i] *= 1e-3f;
  std::vector<float> m(n, 0.0f), v(n, 0.0f);
  AdamRef ref(p);
  std::vector<W> working(n);

  AdamStep s;
  s.lr = 1e-2f;  // large, so update errors are visible against the parameters' own rounding
  s.beta1 = 0.9f;
  s.beta2 = 0.95f;
  s.eps = 1e-8f;
  s.weight_decay = 0.1f;
  for (int step = 1; step <= 6; ++step) {
    SCOPED_TRACE(testing::Message() << "step " << step);
    s.step = step;
    s.grad_scale = step % 2 ? 1.0f : 0.5f;
    std::vector<float> g = rng.floats(n, -1, 1);
    for (std::size_t i = 3; i < n; i += 11) g[i] *= 1e-4f;  // small gradients: eps and vhat matter
    be->adamw(test::cpu_stream(), p.data(), m.data(), v.data(), g.data(), n, s, with_working ? working.data() : nullptr,
              working_type);
    ref.step(g, s);

    // Within twice the propagated fp32 bound (AdamRef). Coupled (L2) decay, a missing bias
    // correction, eps inside the square root or decay after the update each move p by > 1e-5 here,
    // while the bound stays ~1e-6 of |p| and ~1e-6 of the update.
    auto twice = [](std::vector<double> t) {
      for (auto& x : t) x *= 2;
      return t;
    };
    EXPECT_TRUE(test::all_within("m", m, ref.m, twice(ref.tol_m)));
    EXPECT_TRUE(test::all_within("v", v, ref.v, twice(ref.tol_v)));
    EXPECT_TRUE(test::all_within("p", p, ref.p, twice(ref.tol_p)));
    if (with_working) {
      std::vector<std::uint32_t> got(n), want(n);
      for (std::size_t i = 0; i < n; ++i) {
        if constexpr (sizeof(W) == 4) {
          std::memcpy(&got[i], &working[i], 4);
          std::memcpy(&want[i], &p[i], 4);
        } else {
          got[i] = bits16(working[i]);
          want[i] = bits16(from_float<W>(p[i]));
        }
      }
      EXPECT_TRUE(test::all_bits_equal("working params", got.data(), want.data(), n));
    }
  }
}

TEST(AdamW, MatchesTorchAdamWWithoutAWorkingCopy) { check_adamw<float>(DType::f32, false); }
TEST(AdamW, MatchesTorchAdamWAndWritesFp32WorkingParams) { check_adamw<float>(DType::f32, true); }
TEST(AdamW, MatchesTorchAdamWAndWritesBf16WorkingParamsBitwise) { check_adamw<bf16>(DType::bf16, true); }
TEST(AdamW, MatchesTorchAdamWAndWritesFp16WorkingParamsBitwise) { check_adamw<fp16>(DType::f16, true); }

TEST(AdamW, AnIntegerWorkingDtypeIsAnError) {
  auto be = make_cpu_backend();
  std::vector<float> p(4), m(4), v(4), g(4);
  std::vector<std::int32_t> w(4);
  AdamStep s;
  s.lr = 1e-3f;
  EXPECT_THROW(be->adamw(test::cpu_stream(), p.data(), m.data(), v.data(), g.data(), 4, s, w.data(), DType::i32), Error);
}

}  // namespace
}  // namespace tz
