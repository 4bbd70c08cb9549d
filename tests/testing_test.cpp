// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "tokchron/testing.hpp"
#include "tokchron/testing/doctest.hpp"

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

TEST_CASE("message: request id, units, each difference and the tolerance") {
  const auto tl = script().arrive(0ms).first_token(120ms).tokens(10, 20ms).finish().timeline();
  tokchron::request_metrics theirs;
  theirs.ttft = 0.120;
  theirs.tpot = 0.320 / 11;
  theirs.output_rate = 40.0;  // tokchron: 11 / 0.32 s = 34.375 tok/s
  theirs.output_tokens = 10;  // tokchron counts 11
  const auto diff = tokchron::testing::compare("req-7", theirs, tl);
  REQUIRE(diff.mismatches.size() == 3);
  CHECK(diff.request_id == "req-7");
  CHECK(diff.message() ==
        "request req-7: 3 metrics differ from tokchron\n"
        "  tpot: yours 0.0290909091 s, tokchron 0.02 s, yours - tokchron = 0.00909090909 s\n"
        "  output_rate: yours 40 tok/s, tokchron 34.375 tok/s, yours - tokchron = 5.625 tok/s\n"
        "  output_tokens: yours 10 tokens, tokchron 11 tokens, yours - tokchron = -1 tokens\n"
        "  tolerance: 1e-09 relative + 1e-12 absolute");
  // to_string keeps its terse form.
  CHECK(diff.to_string() ==
        "tpot: yours 0.0290909091, tokchron 0.02\noutput_rate: yours 40, tokchron "
        "34.375\noutput_tokens: yours 10, tokchron 11\n");

  tokchron::request_metrics right;
  right.ttft = 0.120;
  const auto same = tokchron::testing::compare("req-8", right, tl);
  CHECK(same.message() == "request req-8: agrees with tokchron");
  CHECK(same == tokchron::testing::no_difference);
  CHECK_FALSE(diff == tokchron::testing::no_difference);
  CHECK(diff != tokchron::testing::no_difference);
}

TEST_CASE("message: an undefined value and no request id") {
  const auto tl = script().arrive(0ms).first_token(80ms).finish().timeline();
  tokchron::request_metrics theirs;
  theirs.tpot = 0.0;
  CHECK(tokchron::testing::compare(theirs, tl, 1e-6, 0).message() ==
        "1 metric differs from tokchron\n"
        "  tpot: yours 0 s, tokchron undefined\n"
        "  tolerance: 1e-06 relative + 0 absolute");
}

TEST_CASE("doctest prints a comparison in full (testing/doctest.hpp)") {
  const auto tl = script().arrive(0ms).first_token(100ms).tokens(4, 10ms).finish().timeline();
  tokchron::request_metrics theirs;
  theirs.e2e = 0.150;  // tokchron: 0.14 s
  const auto diff = tokchron::testing::compare("r1", theirs, tl);
  // What CHECK(diff == no_difference) prints for its two operands.
  CHECK(std::string(doctest::toString(diff).c_str()) == diff.message());
  CHECK(std::string(doctest::toString(tokchron::testing::no_difference).c_str()) ==
        "no difference");
  CHECK(diff.message() ==
        "request r1: 1 metric differs from tokchron\n"
        "  e2e: yours 0.15 s, tokchron 0.14 s, yours - tokchron = 0.01 s\n"
        "  tolerance: 1e-09 relative + 1e-12 absolute");
}
