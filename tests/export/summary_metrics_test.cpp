// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "export/golden.hpp"
#include "tokchron/export/prometheus.hpp"
#include "tokchron/export/snapshot.hpp"
#include "tokchron/metrics/profiles.hpp"
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
