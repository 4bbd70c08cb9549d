// SPDX-License-Identifier: MIT
// tokchron-requires: doctest
#ifndef TOKCHRON_TESTING_DOCTEST_HPP
#define TOKCHRON_TESTING_DOCTEST_HPP

/// \file
/// doctest string makers for the testing helpers: a failed
/// `CHECK(compare(mine, tl) == tokchron::testing::no_difference)` prints the whole difference
/// (`comparison::message`: request id, each metric with both values, their difference and the
/// unit) instead of `CHECK( {?} == {?} )`, and `INFO(diff)` / `CAPTURE(diff)` print it too.
///
/// \code
///   #include <doctest/doctest.h>
///   #include "tokchron/testing/doctest.hpp"
///   TEST_CASE("my server's TPOT") {
///     auto tl = tokchron::testing::script().arrive(0ms).first_token(100ms).tokens(4, 10ms)
///                   .finish().timeline();
///     CHECK(tokchron::testing::compare("r1", my_server_metrics(tl), tl) ==
///           tokchron::testing::no_difference);
///   }
///   // ERROR: CHECK( request r1: 1 metric differs from tokchron (tolerance 1e-09 relative +
///   //   1e-12 absolute)
///   //   tpot: yours 0.028 s, tokchron 0.01 s, yours - tokchron = 0.018 s == no difference )
/// \endcode

#include <doctest/doctest.h>

#include "tokchron/testing.hpp"

namespace doctest {
template <>
struct StringMaker<::tokchron::testing::comparison> {
  static String convert(const ::tokchron::testing::comparison& c) {
    return String(c.message().c_str());
  }
};
template <>
struct StringMaker<::tokchron::testing::no_difference_t> {
  static String convert(const ::tokchron::testing::no_difference_t&) { return "no difference"; }
};
}  // namespace doctest

#endif  // TOKCHRON_TESTING_DOCTEST_HPP
