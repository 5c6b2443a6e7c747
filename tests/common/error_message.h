// error_message(f): the message of the tz::Error that f throws, for tests that check error text.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <string>

#include "core/error.h"

namespace tz::testing {

// Fails the test if f throws nothing or something other than a tz::Error.
template <typename F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-tz::Error exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

}  // namespace tz::testing
