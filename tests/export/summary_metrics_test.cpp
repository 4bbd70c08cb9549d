// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "export/golden.hpp"
#include "tokchron/export/prometheus.hpp"
#include "tokchron/export/summary_gauges.hpp"
#include "tokchron/metrics/builtin_profiles.hpp"
#include "tokchron/metrics/run_summary.hpp"
#include "tokchron/sla/evaluator.hpp"
#include "tokchron/testing.hpp"

using namespace std::chrono_literals;

namespace {
std::vector<tokchron::testing::scripted_timeline> requests() {
  std::vector<tokchron::testing::scripted_timeline> v;
  for (int i = 0; i < 10; ++i)
    v.push_back(tokchron::testing::script()
                    .arrive(std::chrono::milliseconds(100 * i))
                    .first_token(std::chrono::milliseconds(100 * i + 50 + 10 * i))
                    .tokens(4, 10ms)
                    .finish()
                    .timeline());
  return v;
}
}  // namespace

TEST_CASE("run summaries and SLA verdicts as Prometheus gauges") {
  const auto reqs = requests();
  tokchron::summary_options so;
  so.percentiles = {50, 95};
  tokchron::run_summarizer<tokchron::testing::scripted_timeline> sum(tokchron::profiles::canonical,
                                                                     so);
  tokchron::slo_distributions<> slo;
  for (const auto& tl : reqs) {
    sum.add(tl);
    CHECK(slo.add(tl));
  }
  const auto r = sum.summary();
  const auto v = slo.evaluate(tokchron::sla::parse("p50(ttft) < 200ms, p99(ttft) < 1s"));

  tokchron::metrics_snapshot s;
  tokchron::add_run_summary(s, r, {{"run", "a"}});
  tokchron::add_verdicts(s, v, {{"run", "a"}});
  const std::string t = tokchron::to_prometheus(s);
  tokchron_test::check_golden("summary.prom", t);
  // TTFTs are 50, 60, ..., 140 ms: the median (linear) is 95 ms.
  CHECK(t.find("tokchron_run_ttft_seconds{run=\"a\",profile=\"canonical\",percentile=\"50\"} "
               "0.095") != std::string::npos);
  CHECK(t.find("tokchron_run_completed{run=\"a\",profile=\"canonical\"} 10\n") !=
        std::string::npos);
  CHECK(t.find("tokchron_slo_threshold{run=\"a\",objective=\"p50(ttft) < 200ms\"} 0.2\n") !=
        std::string::npos);
  // p99 of 10 samples cannot be shown below 1 s: undecided, so no pass point and decided 0.
  CHECK(t.find("tokchron_slo_decided{run=\"a\",objective=\"p99(ttft) < 1s\"} 0\n") !=
        std::string::npos);
  CHECK(t.find("tokchron_slo_pass{run=\"a\",objective=\"p99(ttft) < 1s\"}") == std::string::npos);
}

TEST_CASE("run summaries and SLA verdicts of several runs share one snapshot's families") {
  const auto reqs = requests();
  tokchron::run_summarizer<tokchron::testing::scripted_timeline> sum(tokchron::profiles::canonical);
  tokchron::slo_distributions<> slo;
  for (const auto& tl : reqs) {
    sum.add(tl);
    CHECK(slo.add(tl));
  }
  const auto r = sum.summary();
  const auto v = slo.evaluate(tokchron::sla::parse("p50(ttft) < 200ms"));

  tokchron::metrics_snapshot s;
  for (const char* run : {"a", "b"}) {
    tokchron::add_run_summary(s, r, {{"run", run}});
    tokchron::add_verdicts(s, v, {{"run", run}});
  }
  std::size_t completed = 0, pass = 0;
  for (const auto& f : s.families) {
    if (f.name == "tokchron_run_completed") completed += f.points.size();
    if (f.name == "tokchron_slo_pass") pass += f.points.size();
  }
  CHECK(completed == 2);
  CHECK(pass == 2);
  const std::string t = tokchron::to_prometheus(s);  // no family twice
  CHECK(t.find("tokchron_run_completed{run=\"b\",profile=\"canonical\"} 10\n") !=
        std::string::npos);
  CHECK(t.find("tokchron_slo_pass{run=\"b\",objective=\"p50(ttft) < 200ms\"} 1\n") !=
        std::string::npos);

  tokchron::metrics_snapshot clash;
  clash.family("tokchron_slo_pass", "not a gauge", tokchron::metric_kind::counter);
  CHECK_THROWS_AS(tokchron::add_verdicts(clash, v), std::invalid_argument);
}
