// SPDX-License-Identifier: MIT
// A doctest program whose one check fails on purpose: ctest passes only when its output holds
// the whole difference as testing/doctest.hpp prints it (tests.cmake beside this file).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <chrono>

#include "tokchron/testing.hpp"
#include "tokchron/testing/doctest.hpp"

using namespace std::chrono_literals;

TEST_CASE("a server whose TPOT is E2E / N") {
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
