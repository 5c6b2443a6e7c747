// Element-by-element comparison for tests: every element within atol + rtol * |want|, and on
// failure a message naming the first mismatching index, both values, and how many elements differ.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace tz::test {

// got[i] vs want[i] for i < n; a NaN on either side is a mismatch.
template <typename G, typename W>
::testing::AssertionResult all_near(const std::string& what, const G* got, const W* want, std::size_t n,
                                    double atol, double rtol) {
  std::size_t bad = 0, first = n;
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double g = double(got[i]), w = double(want[i]);
    double err = std::fabs(g - w);
    if (!(err <= atol + rtol * std::fabs(w))) {
      if (bad++ == 0) first = i;
    }
    if (err > worst || std::isnan(err)) worst = err;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  double g = double(got[first]), w = double(want[first]);
  std::ostringstream os;
  os.precision(9);
  os << what << ": " << bad << " of " << n << " elements differ; first at [" << first << "]: got " << g
     << ", want " << w << ", |diff| " << std::fabs(g - w) << " > tolerance " << atol + rtol * std::fabs(w)
     << " (atol " << atol << ", rtol " << rtol << "); worst |diff| " << worst;
  return ::testing::AssertionFailure() << os.str();
}

template <typename G, typename W>
::testing::AssertionResult all_near(const std::string& what, const std::vector<G>& got,
                                    const std::vector<W>& want, double atol, double rtol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << what << ": size " << got.size() << " != " << want.size();
  return all_near(what, got.data(), want.data(), got.size(), atol, rtol);
}

// Per-element tolerance: |got[i] - want[i]| <= tol[i].
template <typename G>
::testing::AssertionResult all_within(const std::string& what, const std::vector<G>& got,
                                      const std::vector<double>& want, const std::vector<double>& tol) {
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    double err = std::fabs(double(got[i]) - want[i]);
    if (!(err <= tol[i]) && bad++ == 0) first = i;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  std::ostringstream os;
  os.precision(9);
  os << what << ": " << bad << " of " << got.size() << " elements differ; first at [" << first << "]: got "
     << double(got[first]) << ", want " << want[first] << ", |diff| "
     << std::fabs(double(got[first]) - want[first]) << " > tolerance " << tol[first];
  return ::testing::AssertionFailure() << os.str();
}

// Bitwise equality of two arrays of 16- or 32-bit patterns.
template <typename U>
::testing::AssertionResult all_bits_equal(const std::string& what, const U* got, const U* want,
                                          std::size_t n) {
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (got[i] != want[i] && bad++ == 0) first = i;
  if (bad == 0) return ::testing::AssertionSuccess();
  std::ostringstream os;
  os << what << ": " << bad << " of " << n << " elements differ; first at [" << first << "]: got 0x"
     << std::hex << std::uint64_t(got[first]) << ", want 0x" << std::uint64_t(want[first]);
  return ::testing::AssertionFailure() << os.str();
}

}  // namespace tz::test
