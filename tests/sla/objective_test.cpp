// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "tokchron/sla/objective.hpp"

using tokchron::objective;
using tokchron::slo_comparator;
using tokchron::slo_metric;
using tokchron::slo_statistic;

static_assert(noexcept(tokchron::parse_objective(std::string_view())));
static_assert(noexcept(tokchron::parse_sla(std::string_view())));

TEST_CASE("objectives parse from the issue's examples") {
  const objective a = objective::parse("p95(ttft) < 1.5s");
  CHECK(a.metric == slo_metric::ttft);
  CHECK(a.statistic == slo_statistic::percentile);
  CHECK(a.percentile == 95);
  CHECK(a.comparator == slo_comparator::less);
  CHECK(a.threshold == 1.5);
  CHECK(a.upper_bound());

  const objective b = objective::parse("p99(tpot) <= 200ms");
  CHECK(b.metric == slo_metric::tpot);
  CHECK(b.comparator == slo_comparator::less_equal);
  CHECK(b.threshold == doctest::Approx(0.2).epsilon(1e-15));
  CHECK(b.to_string() == "p99(tpot) <= 200ms");

  const objective c = objective::parse("mean(itl) < 50ms");
  CHECK(c.statistic == slo_statistic::mean);
  CHECK(c.metric == slo_metric::itl);
  CHECK(c.threshold == doctest::Approx(0.05).epsilon(1e-15));

  const objective d = objective::parse("p90(tokens_per_s) > 10");
  CHECK(d.metric == slo_metric::output_rate);
  CHECK(d.comparator == slo_comparator::greater);
  CHECK(!d.upper_bound());
  CHECK(d.threshold == 10);
  CHECK(d.to_string() == "p90(output_rate) > 10tok/s");
}

TEST_CASE("objective spellings: aliases, spaces, fractional percentiles, units") {
  CHECK(objective::parse("  p99.9 ( e2e )<=10 s ").to_string() == "p99.9(e2e) <= 10s");
  CHECK(objective::parse("median(queue_time) < 100us").to_string() == "p50(queue_time) < 100us");
  CHECK(objective::parse("median(queue_time) < 100us").threshold ==
        doctest::Approx(1e-4).epsilon(1e-15));
  CHECK(objective::parse("max(prefill) < 2min").threshold == 120);
  CHECK(objective::parse("min(fluidity) >= 0.9").metric == slo_metric::fluidity);
  CHECK(objective::parse("avg(decode_time) < 1e3ms").threshold == 1);
  CHECK(objective::parse("p10(output_rate) >= 12.5 tok/s").threshold == 12.5);
  CHECK(objective::parse("p0(ttft) > 0ns").percentile == 0);
  CHECK(objective::parse("p100(ttft) < 1s").percentile == 100);
  CHECK(objective::parse("p50(normalized_latency) < 40 ms").metric ==
        slo_metric::normalized_latency);
}

TEST_CASE("other spellings parse as aliases and print as the one name") {
  // Other tools' spellings (vLLM's `e2el`) and short forms name the same metrics.
  const std::pair<const char*, const char*> cases[] = {
      {"p95(e2el) < 1s", "p95(e2e) < 1s"},
      {"p95(e2e_latency) < 1s", "p95(e2e) < 1s"},
      {"p95(latency) < 1s", "p95(e2e) < 1s"},
      {"p95(queue) < 1s", "p95(queue_time) < 1s"},
      {"p95(prefill) < 1s", "p95(prefill_time) < 1s"},
      {"p95(decode) < 1s", "p95(decode_time) < 1s"},
      {"p10(tokens_per_s) > 10", "p10(output_rate) > 10tok/s"},
      {"p10(tps) > 10", "p10(output_rate) > 10tok/s"},
      {"p10(user_rate) > 10", "p10(output_rate) > 10tok/s"},
      {"min(fluidity_index) > 0.5", "min(fluidity) > 0.5"},
  };
  for (const auto& c : cases) {
    const char* text = c.first;
    const char* canonical = c.second;
    CAPTURE(text);
    CHECK(objective::parse(text).to_string() == canonical);
    CHECK(objective::parse(canonical) == objective::parse(text));
  }
}

TEST_CASE("every metric of the table can be an objective, by its name or an alias") {
  for (const auto& m : tokchron::metric_table) {
    CAPTURE(m.name);
    const std::string unit = m.is_time() ? "ms" : "";
    const std::string text = "p90(" + std::string(m.name) + ") < 0.5" + unit;
    const objective o = objective::parse(text);
    CHECK(o.metric == m.id);
    CHECK(objective::parse(o.to_string()) == o);
    for (const auto& alias : m.aliases) {
      if (alias.empty()) continue;
      CHECK(objective::parse("p90(" + std::string(alias) + ") < 0.5" + unit).metric == m.id);
    }
  }
  // the message names every metric
  const auto r = tokchron::parse_objective("p95(ttfx) < 1s");
  REQUIRE(!r);
  for (const auto& m : tokchron::metric_table)
    CHECK(std::string(r.error.message).find(m.name) != std::string::npos);
}

TEST_CASE("to_string round-trips through the parser") {
  for (const char* s : {"p95(ttft) < 1.5s", "p99(tpot) <= 200ms", "mean(itl) < 50ms",
                        "p90(tokens_per_s) > 10", "p99.99(e2el) >= 0.125s", "max(decode) < 3us",
                        "min(fluidity) >= 0.9", "p1(fluidity) > 0.75", "p50(queue) < 7ns"}) {
    const objective o = objective::parse(s);
    CHECK(objective::parse(o.to_string()) == o);
  }
}

namespace {
struct bad_case {
  const char* text;
  const char* part;     // the offending part the error must name
  const char* message;  // a fragment of the message
};
}  // namespace

TEST_CASE("a bad objective is rejected naming the offending part") {
  const bad_case cases[] = {
      {"", "", "empty objective"},
      {"p95(ttfx) < 1.5s", "ttfx", "unknown metric"},
      {"q95(ttft) < 1.5s", "q95", "unknown statistic"},
      {"p101(ttft) < 1.5s", "p101", "between 0 and 100"},
      {"pxx(ttft) < 1s", "pxx", "bad percentile"},
      {"p95 ttft < 1s", "t", "expected '('"},
      {"p95(ttft < 1s", "<", "expected ')'"},
      {"p95(ttft) = 1s", "=", "comparator"},
      {"p95(ttft) < -1s", "-", "negative"},
      {"p95(ttft) < fast", "fast", "threshold number"},
      {"p95(ttft) < 1.5", "", "needs a unit"},
      {"p95(ttft) < 1.5hours", "hours", "unknown time unit"},
      {"p95(tokens_per_s) > 10ms", "ms", "rate unit"},
      {"min(fluidity) > 0.9s", "s", "no unit"},
      {"min(fluidity) > 2", "", "at most 1"},
      {"p95(ttft) < 1s and more", "and more", "unexpected text"},
      {"p95(ttft) < 1s)", "s)", "unknown time unit"},
      {"p95() < 1s", ")", "metric name"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    const auto r = tokchron::parse_objective(c.text);
    REQUIRE(!r);
    CHECK(std::string(r.error.message).find(c.message) != std::string::npos);
    if (std::string_view(c.part).empty())
      CHECK(r.error.length == 0);
    else
      CHECK(r.error.part(c.text) == c.part);
    // the throwing form says the same and quotes the text
    try {
      (void)objective::parse(c.text);
      FAIL("no exception");
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      CHECK(what.find(c.message) != std::string::npos);
      CHECK(what.find(std::string("\"") + c.text + "\"") != std::string::npos);
      if (!std::string_view(c.part).empty())
        CHECK(what.find(std::string("'") + c.part + "'") != std::string::npos);
    }
  }
}

TEST_CASE("an SLA is a list of objectives") {
  const auto s = tokchron::sla::parse(
      "p95(ttft) < 1.5s, p95(tpot) < 100ms; mean(itl) < 50ms "
      "and p90(tokens_per_s) > 10");
  REQUIRE(s.objectives.size() == 4);
  CHECK(s.objectives[0].metric == slo_metric::ttft);
  CHECK(s.objectives[1].threshold == doctest::Approx(0.1).epsilon(1e-15));
  CHECK(s.objectives[2].statistic == slo_statistic::mean);
  CHECK(s.objectives[3].comparator == slo_comparator::greater);

  const std::string_view text = "p95(ttft) < 1.5s, p95(tpotx) < 100ms";
  const auto r = tokchron::parse_sla(text);
  REQUIRE(!r);
  CHECK(r.error.part(text) == "tpotx");  // offsets are into the whole text
  CHECK(!tokchron::parse_sla(""));
  CHECK(!tokchron::parse_sla("p95(ttft) < 1s,"));
  CHECK_THROWS_AS((void)tokchron::sla::parse("p95(ttft) < 1s,,p99(ttft) < 2s"),
                  std::invalid_argument);
}
