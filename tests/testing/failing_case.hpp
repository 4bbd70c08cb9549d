// SPDX-License-Identifier: MIT
// The one test case of failing_doctest.cpp and failing_catch2.cpp, whose CHECK fails on purpose
// (included after the framework's header and its tokchron adaptor).
#include <chrono>

#include "tokchron/testing.hpp"

TEST_CASE("a server whose TPOT is E2E / N") {
  using namespace std::chrono_literals;
  const auto tl = tokchron::testing::script()
                      .arrive(0ms)
                      .first_token(100ms)
                      .tokens(4, 10ms)
                      .finish()
                      .timeline();
  tokchron::request_metrics mine;
  mine.ttft = 0.100;
  mine.tpot = 0.140 / 5;  // tokchron: (140 - 100) ms / 4 = 10 ms
  CHECK(tokchron::testing::compare("r1", mine, tl) == tokchron::testing::no_difference);
}
