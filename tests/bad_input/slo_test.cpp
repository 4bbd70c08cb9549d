// SPDX-License-Identifier: MIT
// Bad input to the SLO parsers (docs/bad-input.md, rows S1-S5): an unparsable
// objective gives the offset and length of the offending part and a message (never throws); the
// throwing forms throw std::invalid_argument quoting that part.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <string_view>

#include "tokchron/metrics/run_summary.hpp"
#include "tokchron/sla/goodput.hpp"
#include "tokchron/sla/objective.hpp"

namespace {
struct bad_objective {
  const char* text;
  const char* part;     // what the error points at ("" = the end of the text)
  const char* message;  // a fragment of the message
};
}  // namespace

TEST_CASE("bad input S1: an unparsable objective names the offending part") {
  const bad_objective cases[] = {
      {"", "", "empty"},
      {"q95(ttft) < 1s", "q95", "unknown statistic"},
      {"p101(ttft) < 1s", "p101", "between 0 and 100"},
      {"pnan(ttft) < 1s", "pnan", "bad percentile"},
      {"p95(tft) < 1s", "tft", "unknown metric"},
      {"p95(ttft < 1s", "<", "expected ')'"},
      {"p95(ttft) = 1s", "=", "comparator"},
      {"p95(ttft) < nan s", "nan", "threshold number"},
      {"p95(ttft) < inf s", "inf", "threshold number"},
      {"p95(ttft) < 1e999s", "1e999s", "threshold number"},
      {"p95(ttft) < -1s", "-", "negative"},
      {"p95(ttft) < 1", "", "needs a unit"},
      {"p95(ttft) < 1.5 parsecs", "parsecs", "unknown time unit"},
      {"p95(ttft) < 1s extra", "extra", "unexpected text"},
      {"p95(fluidity) > 1.5", "", "at most 1"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    const std::string_view text(c.text);
    const auto r = tokchron::parse_objective(text);
    REQUIRE_FALSE(r);
    CHECK(r.error.offset <= text.size());
    CHECK(r.error.part(text) == std::string_view(c.part));
    CHECK(std::string(r.error.message).find(c.message) != std::string::npos);
    try {
      (void)tokchron::objective::parse(text);
      FAIL("objective::parse accepted a bad objective");
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      CHECK(what.find(c.message) != std::string::npos);
      if (*c.part) CHECK(what.find(std::string("'") + c.part + "'") != std::string::npos);
    }
  }
}

TEST_CASE("bad input S2: in an SLA, the error offset points into the whole text") {
  const std::string_view text = "p95(ttft) < 1s, p99(tpot) < 1 parsec";
  const auto r = tokchron::parse_sla(text);
  REQUIRE_FALSE(r);
  CHECK(r.error.part(text) == "parsec");
  CHECK_THROWS_AS((void)tokchron::sla::parse(text), std::invalid_argument);
  CHECK_FALSE(tokchron::parse_sla(""));
  CHECK_FALSE(tokchron::parse_sla(",,"));
}

TEST_CASE("bad input S3: bad per-request limits are refused with the offending part") {
  struct {
    const char* text;
    const char* part;
  } cases[] = {{"ttft:1s,ttft:2s", "ttft"},
               {"ttft:1s,bogus:2s", "bogus"},
               {"ttft", "ttft"},
               {"ttft:", ""},
               {"ttft:-1s", "-1s"}};
  for (const auto& c : cases) {
    CAPTURE(c.text);
    const std::string_view text(c.text);
    const auto r = tokchron::parse_request_slo(text);
    REQUIRE_FALSE(r);
    CHECK(r.error.offset <= text.size());
    CHECK(r.error.part(text) == std::string_view(c.part));
    CHECK_THROWS_AS((void)tokchron::request_slo::parse(text), std::invalid_argument);
  }
}

TEST_CASE("bad input S4: a bad percentile list throws std::invalid_argument naming the item") {
  for (const char* text : {"", "50,", "50,,90", "101", "-1", "nan", "inf", "50;90", "9O"}) {
    CAPTURE(text);
    CHECK_THROWS_AS((void)tokchron::parse_percentiles(text), std::invalid_argument);
  }
  try {
    (void)tokchron::parse_percentiles("50,abc");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("'abc'") != std::string::npos);
  }
}

TEST_CASE("bad input S5: a number with more digits than a double holds is refused, not rounded") {
  // p99.99999999999999999999 reads as 100 (the maximum), 0.30000000000000001 as 0.3.
  const bad_objective objectives[] = {
      {"p99.99999999999999999999(ttft) < 1s", "p99.99999999999999999999", "more digits"},
      {"p99.999999999999999(ttft) < 1s", "p99.999999999999999", "more digits"},
      {"p50(ttft) < 0.30000000000000001s", "0.30000000000000001", "more digits"},
      {"p50(output_rate) > 1.0000000000000000000000000001", "1.0000000000000000000000000001",
       "more digits"},
  };
  for (const auto& c : objectives) {
    CAPTURE(c.text);
    const std::string_view text(c.text);
    const auto r = tokchron::parse_objective(text);
    REQUIRE_FALSE(r);
    CHECK(r.error.part(text) == std::string_view(c.part));
    CHECK(std::string(r.error.message).find(c.message) != std::string::npos);
    CHECK_THROWS_AS((void)tokchron::objective::parse(text), std::invalid_argument);
  }
  // What a double holds is taken as written: up to 15 significant digits always, and the
  // shortest form of any double.
  for (const char* ok : {"p99.9(ttft) < 1.5s", "p99.999999999999(ttft) < 1s", "p100(ttft) < 1s",
                         "p0(ttft) < 0.30000000000000004s", "median(ttft) < 1e-3s",
                         "p50(ttft) < 000.5000s", "p50(ttft) < 1.7976931348623157e308s"}) {
    CAPTURE(ok);
    CHECK(tokchron::parse_objective(ok));
  }
  CHECK(tokchron::objective::parse("p99.999999999999(ttft) < 1s").percentile == 99.999999999999);

  const auto limit = tokchron::parse_request_slo("ttft:0.10000000000000001s");
  REQUIRE_FALSE(limit);
  CHECK(limit.error.part("ttft:0.10000000000000001s") == "0.10000000000000001");
  CHECK(tokchron::parse_request_slo("ttft:0.1s,tpot:50ms"));

  for (const char* text : {"99.99999999999999999999", "50,99.999999999999999"}) {
    CAPTURE(text);
    CHECK_THROWS_WITH_AS((void)tokchron::parse_percentiles(text),
                         doctest::Contains("more digits than a double holds"),
                         std::invalid_argument);
  }
  CHECK(tokchron::parse_percentiles("50,99.9,99.999999999999").size() == 3);
}
