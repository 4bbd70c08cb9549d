// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <chrono>

#include "tokchron/testing.hpp"

using namespace std::chrono_literals;
using tokchron::testing::script;

TEST_CASE("compare: a server that computes TPOT as E2E / N is caught") {
  const auto tl = script().arrive(0ms).first_token(120ms).tokens(10, 20ms).finish().timeline();
  tokchron::request_metrics theirs;
  theirs.ttft = 0.120;
  theirs.e2e = 0.320;
  theirs.tpot = 0.320 / 11;  // the classic mistake
  const auto diff = tokchron::testing::compare(theirs, tl);
  REQUIRE(!diff.ok());
  REQUIRE(diff.mismatches.size() == 1);
  CHECK(diff.mismatches[0].metric == "tpot");
  CHECK(diff.to_string().find("tpot: yours 0.0290909") == 0);
  theirs.tpot = 0.020;
  CHECK(tokchron::testing::compare(theirs, tl).ok());
}

TEST_CASE("compare: a server that reports TPOT 0 for a 1-token response is caught") {
  const auto tl = script().arrive(0ms).first_token(80ms).finish().timeline();
  tokchron::request_metrics theirs;
  theirs.tpot = 0.0;
  const auto diff = tokchron::testing::compare(theirs, tl);
  REQUIRE(diff.mismatches.size() == 1);
  CHECK(!diff.mismatches[0].ours);
  CHECK(diff.to_string() == "tpot: yours 0, tokchron undefined\n");
}

TEST_CASE("script keeps the first misuse") {
  auto s = script();
  s.arrive(100ms).chunk(50ms, 1);
  CHECK(s.status() == tokchron::record_status::time_went_backwards);
  s.finish(200ms);
  CHECK(s.status() == tokchron::record_status::time_went_backwards);
  CHECK(s.timeline().finished());
}

TEST_CASE("chunks(): k tokens per chunk") {
  const auto tl = script().arrive(0ms).first_token(100ms).chunks(5, 4, 40ms).finish().timeline();
  CHECK(tl.output_tokens() == 21);
  CHECK(tokchron::tpot(tl)->count() == doctest::Approx(200e6 / 20));
}
