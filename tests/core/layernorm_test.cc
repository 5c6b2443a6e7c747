// Tests Backend::layernorm_forward / layernorm_backward on the cpu backend: outputs, saved mean and
// rstd against a double reference for each parameter dtype; dinp, dw, db against finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/backend.h"
#include "tests/common/compare.h"
#include "tests/common/finite_diff.h"
#include "tests/common/random.h"
#include "tests/common/typed_params.h"
#include "tests/common/stream.h"

namespace tz {
namespace {

constexpr double kEps = 1e-5;

struct LnRef {
  std::vector<double> out, mean, rstd, xhat;
  // Per row, the relative error an fp32 evaluation of the statistics may have: the two-pass mean
  // and variance are sums of C terms (C * 2^-24 relative to their sizes) and the mean's error is
  // amplified by max|x| * rstd (large offsets, small spread) when it is subtracted.
  std::vector<double> kappa;
};

LnRef layernorm_ref(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                    int N, int C) {
  LnRef r{std::vector<double>(x.size()), std::vector<double>(N), std::vector<double>(N),
          std::vector<double>(x.size()), std::vector<double>(N)};
  for (int n = 0; n < N; ++n) {
    const double* row = &x[std::size_t(n) * C];
    double m = 0, var = 0;
    for (int c = 0; c < C; ++c) m += row[c];
    m /= C;
    for (int c = 0; c < C; ++c) var += (row[c] - m) * (row[c] - m);
    var /= C;
    const double s = 1.0 / std::sqrt(var + kEps);
    double max_abs = 0;
    for (int c = 0; c < C; ++c) {
      r.xhat[std::size_t(n) * C + c] = (row[c] - m) * s;
      r.out[std::size_t(n) * C + c] = (row[c] - m) * s * w[c] + b[c];
      max_abs = std::max(max_abs, std::fabs(row[c]));
    }
    r.mean[n] = m;
    r.rstd[n] = s;
    r.kappa[n] = (C + 2) * std::ldexp(1.0, -24) * (max_abs * s + 1);
  }
  return r;
}

// Rows of different scales and offsets: O(1) rows, a row with variance ~3e-5 around 3 where
// eps = 1e-5 changes rstd by 12% (so a wrong eps fails) and fp32 loses ~9 bits to the offset, and a
// constant row where rstd = 1/sqrt(eps).
std::vector<float> ln_inputs(test::Rng& rng, int N, int C) {
  std::vector<float> x(std::size_t(N) * C);
  for (int n = 0; n < N; ++n) {
    const double scale = n == 1 ? 0.01 : n == 2 ? 0.0 : 1.0 + n % 3;  // row 1 sits at offset 3
    const double offset = n % 2 ? 3.0 : -0.5;
    for (int c = 0; c < C; ++c) x[std::size_t(n) * C + c] = float(offset + scale * rng.uniform(-1, 1));
  }
  return x;
}

TEST(LayerNorm, ForwardMatchesADoubleReferenceForEachParamDtype) {
  auto be = make_cpu_backend();
  test::Rng rng(40);
  for (int C : {8, 67}) {  // 67: not a multiple of the vector width
    const int N = 7;
    for (DType dt : test::kParamDtypes) {
      SCOPED_TRACE(testing::Message() << "C=" << C << " " << test::dtype_label(dt));
      const std::vector<float> x = ln_inputs(rng, N, C);
      test::TypedParams w(rng.floats(C, 0.5, 1.5), dt), b(rng.floats(C), dt);
      std::vector<float> out(x.size(), NAN), mean(N, NAN), rstd(N, NAN);
      be->layernorm_forward(test::cpu_stream(), out.data(), mean.data(), rstd.data(), x.data(), w.view(), b.view(), N, C);
      const LnRef ref = layernorm_ref(test::to_double(x), w.values(), b.values(), N, C);
      // Tolerances from the row's kappa (see LnRef): mean within kappa / rstd, rstd within
      // kappa * rstd, and out = xhat * w + b within 2 * kappa * |w| * (1 + |xhat|) plus its own
      // rounding. A wrong eps or a biased/unbiased variance mix-up is off by > 0.5%, far beyond.
      std::vector<double> tol_mean(N), tol_rstd(N), tol_out(x.size());
      for (int n = 0; n < N; ++n) {
        tol_mean[n] = ref.kappa[n] / ref.rstd[n];
        tol_rstd[n] = ref.kappa[n] * ref.rstd[n];
        for (int c = 0; c < C; ++c) {
          const std::size_t i = std::size_t(n) * C + c;
          tol_out[i] = 2 * ref.kappa[n] * std::fabs(w.values()[c]) * (1 + std::fabs(ref.xhat[i])) +
                       std::ldexp(std::fabs(ref.out[i]), -22);
        }
      }
      EXPECT_TRUE(test::all_within("mean", mean, ref.mean, tol_mean));
      EXPECT_TRUE(test::all_within("rstd", rstd, ref.rstd, tol_rstd));
      EXPECT_TRUE(test::all_within("out", out, ref.out, tol_out));
    }
  }
}

TEST(LayerNorm, BackwardAccumulatesTheFiniteDifferenceGradientsForEachParamDtype) {
  auto be = make_cpu_backend();
  test::Rng rng(41);
  const int N = 5, C = 67;  // C spans two 64-channel blocks of the dw/db reduction
  for (DType dt : test::kParamDtypes) {
    SCOPED_TRACE(test::dtype_label(dt));
    std::vector<float> x = ln_inputs(rng, N, C);
    // Keep finite differences well conditioned: no constant row (its dinp is ~1/sqrt(eps) * |w|,
    // far from the O(1) regime the step size is chosen for). Row 1 keeps its small variance.
    for (int c = 0; c < C; ++c) x[2 * C + c] = float(1.0 + rng.uniform(-0.5, 0.5));
    test::TypedParams w(rng.floats(C, 0.5, 1.5), dt), b(rng.floats(C), dt);
    const std::vector<float> dout = rng.floats(x.size());
    const std::vector<double> L = test::to_double(dout);
    const std::vector<double> xd = test::to_double(x);

    std::vector<float> out(x.size()), mean(N), rstd(N);
    be->layernorm_forward(test::cpu_stream(), out.data(), mean.data(), rstd.data(), x.data(), w.view(), b.view(), N, C);
    const std::vector<float> dinp0 = rng.floats(x.size()), dw0 = rng.floats(C), db0 = rng.floats(C);
    std::vector<float> dinp = dinp0, dw = dw0, db = db0;
    be->layernorm_backward(test::cpu_stream(), dinp.data(), dw.data(), db.data(), dout.data(), x.data(), w.view(), mean.data(),
                           rstd.data(), N, C);

    // h = 1e-7: the small-variance row has rstd ~ 150, so its third derivative is ~rstd^3 ~ 4e6 and
    // the truncation error h^2 / 6 * 4e6 ~ 1e-8; cancellation 1e-16 * |L| / h ~ 1e-7.
    auto fd_x = test::central_differences(
        [&](const std::vector<double>& v) {
          return test::dot(L, layernorm_ref(v, w.values(), b.values(), N, C).out);
        },
        xd, 1e-7);
    auto fd_w = test::central_differences(
        [&](const std::vector<double>& v) {
          return test::dot(L, layernorm_ref(xd, v, b.values(), N, C).out);
        },
        w.values());
    auto fd_b = test::central_differences(
        [&](const std::vector<double>& v) {
          return test::dot(L, layernorm_ref(xd, w.values(), v, N, C).out);
        },
        b.values());
    for (std::size_t i = 0; i < fd_x.size(); ++i) fd_x[i] += dinp0[i];
    for (int c = 0; c < C; ++c) {
      fd_w[c] += dw0[c];
      fd_b[c] += db0[c];
    }
    // The kernel recomputes xhat from the fp32 mean and rstd, so each xhat carries up to
    // 2 * kappa * (1 + max|xhat|) of error (see LnRef). dinp = rstd * (dnorm - mean(dnorm) -
    // xhat * mean(dnorm * xhat)) with dnorm = w * dout; its terms' sizes M bound how far that error
    // (and the fp32 sums' own) can move it: 4 * kappa * (1 + max|xhat|) * M. dw sums N terms
    // xhat * dout, db sums N terms dout. The finite differences add < 1e-6 (see the step above).
    const LnRef ref = layernorm_ref(xd, w.values(), b.values(), N, C);
    const double u = std::ldexp(1.0, -24);
    std::vector<double> tol_x(x.size()), tol_w(C, 1e-6), tol_b(C, 1e-6);
    for (int n = 0; n < N; ++n) {
      double max_xhat = 0, mean_dnorm = 0, mean_dnorm_xhat = 0;
      for (int c = 0; c < C; ++c) {
        const std::size_t i = std::size_t(n) * C + c;
        max_xhat = std::max(max_xhat, std::fabs(ref.xhat[i]));
        mean_dnorm += std::fabs(w.values()[c] * L[i]) / C;
        mean_dnorm_xhat += std::fabs(w.values()[c] * L[i] * ref.xhat[i]) / C;
      }
      const double err = 4 * ref.kappa[n] * (1 + max_xhat);
      for (int c = 0; c < C; ++c) {
        const std::size_t i = std::size_t(n) * C + c;
        const double M = ref.rstd[n] * (std::fabs(w.values()[c] * L[i]) + mean_dnorm +
                                        std::fabs(ref.xhat[i]) * mean_dnorm_xhat);
        tol_x[i] = err * M + 2 * u * std::fabs(dinp0[i]) + 1e-6;
        tol_w[c] += std::fabs(L[i]) * err + (N + 2) * u * std::fabs(ref.xhat[i] * L[i]);
        tol_b[c] += (N + 2) * u * std::fabs(L[i]);
      }
    }
    for (int c = 0; c < C; ++c) {
      tol_w[c] += (N + 2) * u * std::fabs(dw0[c]);
      tol_b[c] += (N + 2) * u * std::fabs(db0[c]);
    }
    EXPECT_TRUE(test::all_within("dinp", dinp, fd_x, tol_x));
    EXPECT_TRUE(test::all_within("dw", dw, fd_w, tol_w));
    EXPECT_TRUE(test::all_within("db", db, fd_b, tol_b));
  }
}

}  // namespace
}  // namespace tz
