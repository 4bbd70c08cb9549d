// SPDX-License-Identifier: MIT
// tokchron-requires: catch2
#ifndef TOKCHRON_TESTING_CATCH2_HPP
#define TOKCHRON_TESTING_CATCH2_HPP

/// \file
/// Catch2 (2.x, `<catch2/catch.hpp>`) string makers for the testing helpers: a failed
/// `CHECK(compare(mine, tl) == tokchron::testing::no_difference)` prints the whole difference
/// (`comparison::message`: request id, each metric with both values, their difference and the
/// unit) in its "with expansion:" lines, and `INFO` / `CAPTURE` of a comparison print it too.
///
/// \code
///   #include <catch2/catch.hpp>
///   #include "tokchron/testing/catch2.hpp"
///   TEST_CASE("my server's TPOT") {
///     auto tl = tokchron::testing::script().arrive(0ms).first_token(100ms).tokens(4, 10ms)
///                   .finish().timeline();
///     CHECK(tokchron::testing::compare("r1", my_server_metrics(tl), tl) ==
///           tokchron::testing::no_difference);
///   }
/// \endcode

#include <catch2/catch.hpp>
#include <string>

#include "tokchron/testing.hpp"

namespace Catch {
template <>
struct StringMaker<::tokchron::testing::comparison> {
  static std::string convert(const ::tokchron::testing::comparison& c) { return c.message(); }
};
template <>
struct StringMaker<::tokchron::testing::no_difference_t> {
  static std::string convert(const ::tokchron::testing::no_difference_t&) {
    return "no difference";
  }
};
}  // namespace Catch

#endif  // TOKCHRON_TESTING_CATCH2_HPP
