// SPDX-License-Identifier: MIT
// A Catch2 program whose one check fails on purpose: ctest passes only when its output holds
// the whole difference as testing/catch2.hpp prints it (tests.cmake beside this file).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#include <chrono>

#include "tokchron/testing.hpp"
#include "tokchron/testing/catch2.hpp"

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
