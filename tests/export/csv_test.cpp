// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <chrono>
#include <limits>
#include <string>

#include "export/golden.hpp"
#include "tokchron/export/csv.hpp"
#include "tokchron/sla/evaluator.hpp"
#include "tokchron/testing.hpp"

using namespace std::chrono_literals;

TEST_CASE("CSV: one row per request with every canonical metric") {
  // The example timeline of docs/library/definitions.md, a 1-token request (no TPOT: an empty cell,
  // not 0) and an unfinished one; ids that need quoting.
  const auto readme = tokchron_test::readme_timeline();
  const auto one = tokchron::testing::script()
                       .arrive(0ms)
                       .first_token(50ms)
                       .finish(60ms, tokchron::finish_reason::length)
                       .timeline();
  const auto open = tokchron::testing::script().arrive(0ms).first_token(10ms).timeline();
  std::string csv = tokchron::request_csv_header();
  tokchron::append_request_csv(csv, "r1", readme);
  tokchron::append_request_csv(csv, "a,\"b\"", one);
  tokchron::append_request_csv(csv, "open", open);
  tokchron_test::check_golden("requests.csv", csv);
  // docs/library/definitions.md's example column, cell by cell.
  // Then ttfa, reasoning_time, ttst, prefill_tps, uncached_prefill_tps, spec_acceptance: with no
  // reasoning chunk ttfa = ttft; ttst is the gap to the second token; 7 prompt tokens / 0.12 s.
  CHECK(csv.find("r1,stop,1,0.12,0.118,0.08,0.0125,0.18,0.035,0.08,0.05,0.036,"
                 "27.77777777777778,0.12,,0.03,58.333333333333336,,,5,7,0\r\n") !=
        std::string::npos);
  CHECK(csv.find("\"a,\"\"b\"\"\",length,1,0.05,,,,0.06,,,0,0.06,16.666666666666668,0.05,,,,,,1,,"
                 "0\r\n") != std::string::npos);
  CHECK(csv.find("open,,0,0.01,,,,,,,0,,,0.01,,,,,,1,,0\r\n") != std::string::npos);
}

TEST_CASE("CSV: one row per verdict") {
  tokchron::slo_distributions<> d;
  for (int i = 0; i < 100; ++i)
    CHECK(d.add(tokchron::testing::script()
                    .arrive(0ms)
                    .first_token(std::chrono::milliseconds(10 + i))
                    .tokens(3, 5ms)
                    .finish()
                    .timeline()));
  const auto v = d.evaluate(tokchron::sla::parse("p50(ttft) < 200ms, mean(tpot) < 1ms"));
  std::string csv = tokchron::verdict_csv_header();
  tokchron::append_verdict_csv(csv, v);
  tokchron_test::check_golden("verdicts.csv", csv);
  CHECK(csv.find("p50(ttft) < 200ms,ttft,pass,0.2,0.0595,") != std::string::npos);
  CHECK(csv.find("mean(tpot) < 1ms,tpot,fail,0.001,0.00500000000000000") != std::string::npos);
}

TEST_CASE("CSV: integers in full, other numbers in the shortest exact form") {
  std::string out;
  for (const double v : {400.0, 1e6, 123456789012.0, 0.25, 1.5e-7, -3.0}) {
    tokchron::detail::append_csv_number(out, v);
    out += ',';
  }
  tokchron::detail::append_csv_number(out, std::nullopt);
  CHECK(out == "400,1000000,123456789012,0.25,1.5e-07,-3,");
}

TEST_CASE("CSV: integer_text writes integers below 2^53 in full, nothing else") {
  CHECK(tokchron::integer_text(1e6) == "1000000");
  CHECK(tokchron::integer_text(-0.0) == "0");
  CHECK(tokchron::integer_text(9007199254740991.0) == "9007199254740991");
  CHECK(tokchron::integer_text(-9007199254740991.0) == "-9007199254740991");
  CHECK_FALSE(tokchron::integer_text(9007199254740992.0));  // 2^53: no longer every integer
  CHECK_FALSE(tokchron::integer_text(1e300));
  CHECK_FALSE(tokchron::integer_text(0.5));
  CHECK_FALSE(tokchron::integer_text(std::numeric_limits<double>::infinity()));
  CHECK_FALSE(tokchron::integer_text(std::numeric_limits<double>::quiet_NaN()));
}
