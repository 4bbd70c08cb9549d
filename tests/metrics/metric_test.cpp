// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <chrono>
#include <cstddef>
#include <set>
#include <string>
#include <type_traits>

#include "tokchron/export/csv.hpp"
#include "tokchron/export/serving_metrics.hpp"
#include "tokchron/metrics/builtin_profiles.hpp"
#include "tokchron/metrics/canonical.hpp"
#include "tokchron/metrics/metric_table.hpp"
#include "tokchron/sla/objective.hpp"
#include "tokchron/testing.hpp"

namespace tc = tokchron;
using tc::metric_id;

TEST_CASE("the metric table: one row per id, in order, one name each") {
  REQUIRE(tc::metric_count == sizeof(tc::metric_table) / sizeof(tc::metric_table[0]));
  std::set<std::string> spellings;
  for (std::size_t i = 0; i < tc::metric_count; ++i) {
    const auto& m = tc::metric_table[i];
    CAPTURE(m.name);
    CHECK(static_cast<std::size_t>(m.id) == i);
    CHECK(&tc::info(m.id) == &m);
    CHECK(tc::to_string(m.id) == m.name);
    CHECK(tc::metric_from_name(m.name) == m.id);
    CHECK(spellings.insert(std::string(m.name)).second);
    for (const auto& a : m.aliases) {
      if (a.empty()) continue;
      CHECK(tc::metric_from_name(a) == m.id);
      CHECK(spellings.insert(std::string(a)).second);  // no spelling names two metrics
    }
    CHECK(tc::is_time_metric(m.id) == (m.unit == tc::metric_unit::seconds));
    CHECK_FALSE(m.help.empty());
    // Prometheus: a valid name, with the unit suffix for times.
    const std::string prom = tc::prometheus_name(m.id, "tokchron_");
    CHECK(prom.rfind("tokchron_", 0) == 0);
    CHECK((prom.size() > 8 && prom.compare(prom.size() - 8, 8, "_seconds") == 0) == m.is_time());
    if (m.served) CHECK_FALSE(m.vllm_name.empty());
  }
  CHECK_FALSE(tc::metric_from_name("e2e_seconds"));
  CHECK_FALSE(tc::metric_from_name(""));
}

TEST_CASE("counts come from the table") {
  CHECK(tc::slo_metric_count == tc::metric_count);
  std::size_t served = 0;
  for (const auto& m : tc::metric_table) served += m.served ? 1 : 0;
  CHECK(tc::serving_metric_count == served);
  const tc::serving_metrics sm;
  std::size_t histograms = 0;
  for (const auto& f : sm.snapshot().families)
    histograms += f.kind == tc::metric_kind::histogram ? 1 : 0;
  CHECK(histograms == served);
}

namespace {
// The record's `field` names distinct members: writing metric i's field and reading every
// metric back finds i exactly there.
template <class Record>
void check_fields_distinct() {
  for (const auto& written : tc::metric_table) {
    if (!Record::field(written.id)) continue;
    Record r{};
    r.*Record::field(written.id) = 1.0;
    for (const auto& read : tc::metric_table) {
      CAPTURE(read.name);
      CHECK(r.value(read.id).has_value() == (read.id == written.id));
    }
  }
}
}  // namespace

TEST_CASE("request_metrics maps each metric to its own field; the canonical profile agrees") {
  check_fields_distinct<tc::request_metrics>();
  // canonical_metrics (any store) and evaluate(profiles::canonical, ...) (full store) are two
  // engines filling one record: where both compute a metric, the values are equal.
  using namespace std::chrono_literals;
  auto tl = tc::testing::script()
                .arrive(0ms)
                .scheduled(3ms)
                .chunk(23ms, 1, tc::chunk_kind::reasoning)
                .chunk(30ms, 2, tc::chunk_kind::reasoning)
                .tokens(4, 7ms)
                .prompt_tokens(40)
                .finish(60ms)
                .timeline();
  tl.set_cached_prompt_tokens(16);
  REQUIRE(tl.set_speculative(10, 7) == tc::record_status::ok);
  const tc::request_metrics m = tc::canonical_metrics(tl);
  const tc::request_metrics p = tc::evaluate(tc::profiles::canonical, tl);
  int both = 0;
  for (const auto& d : tc::metric_table) {
    // evaluate measures TTFT from the profile's origin only; itl is pooled canonically
    if (!tc::request_metrics::canonical(d.id) || d.id == tc::metric_id::ttft_from_send ||
        d.id == tc::metric_id::ttft_from_scheduled)
      continue;
    CAPTURE(d.name);
    REQUIRE(m.value(d.id));
    REQUIRE(p.value(d.id));
    CHECK(*p.value(d.id) == doctest::Approx(*m.value(d.id)).epsilon(1e-12));
    ++both;
  }
  // ttft, tpot, e2e, queue_time, prefill_time, decode_time, normalized, rate, and ttfa,
  // reasoning_time, ttst, prefill_tps, uncached_prefill_tps, spec_acceptance
  CHECK(both == 14);
}

TEST_CASE("the request CSV header is the table's names of the canonical metrics") {
  CHECK(!tc::request_metrics::canonical(tc::metric_id::itl));
  CHECK(tc::request_metrics::field(tc::metric_id::itl) != nullptr);
  for (const auto& d : tc::metric_table) {  // every metric with one value per request has a field
    CAPTURE(d.name);
    const bool pooled_or_deadlines = d.id == tc::metric_id::icl || d.id == tc::metric_id::fluidity;
    CHECK((tc::request_metrics::field(d.id) == nullptr) == pooled_or_deadlines);
  }
  std::string want = "id,finish_reason,succeeded";
  for (const auto& d : tc::metric_table)
    if (tc::request_metrics::canonical_field(d.id)) want += "," + std::string(d.name);
  want += ",output_tokens,prompt_tokens,preemptions\r\n";
  CHECK(tc::request_csv_header() == want);
}
