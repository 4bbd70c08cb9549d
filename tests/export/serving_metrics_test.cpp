// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "export/golden.hpp"
#include "tokchron/export/prometheus.hpp"
#include "tokchron/export/serving_metrics.hpp"
#include "tokchron/testing.hpp"

using namespace std::chrono_literals;

using tokchron_test::readme_timeline;

TEST_CASE("serving_metrics: records every canonical metric and counter") {
  tokchron::serving_metrics m;
  CHECK(m.record(readme_timeline()));
  using sm = tokchron::serving_metric;
  // Exact mode (few samples): the histograms answer exactly.
  CHECK(*m.histogram(sm::ttft).quantile(0.5) == doctest::Approx(0.120).epsilon(1e-12));
  CHECK(*m.histogram(sm::e2e).max() == doctest::Approx(0.180).epsilon(1e-12));
  CHECK(*m.histogram(sm::queue_time).max() == doctest::Approx(0.035).epsilon(1e-12));
  CHECK(*m.histogram(sm::tpot).max() == doctest::Approx(0.0125).epsilon(1e-12));
  CHECK(m.histogram(sm::itl).count() == 4);
  CHECK(m.histogram(sm::itl).sum() == doctest::Approx(0.050).epsilon(1e-12));
  CHECK(m.requests(tokchron::finish_reason::stop) == 1);
  CHECK(m.output_tokens() == 5);
  CHECK(m.prompt_tokens() == 7);

  // An unfinished request is refused and counted; nothing else changes.
  auto open = tokchron::testing::script().arrive(0ms).first_token(10ms).timeline();
  CHECK_FALSE(m.record(open));
  CHECK(m.unfinished() == 1);
  CHECK(m.histogram(sm::ttft).count() == 1);
}

TEST_CASE("serving_metrics: merge equals recording into one") {
  tokchron::serving_metrics a, b, both;
  for (int i = 0; i < 200; ++i) {
    auto tl =
        tokchron::testing::script()
            .arrive(0ms)
            .scheduled(std::chrono::milliseconds(i % 13))
            .first_token(std::chrono::milliseconds(20 + i))
            .tokens(static_cast<std::uint32_t>(1 + i % 9), std::chrono::milliseconds(1 + i % 5))
            .finish(i % 7 == 0 ? tokchron::finish_reason::length : tokchron::finish_reason::stop)
            .timeline();
    CHECK((i % 2 == 0 ? a : b).record(tl));
    CHECK(both.record(tl));
  }
  a.merge(b);
  using sm = tokchron::serving_metric;
  for (auto k :
       {sm::ttft, sm::tpot, sm::itl, sm::e2e, sm::queue_time, sm::prefill_time, sm::decode_time}) {
    CHECK(a.histogram(k).count() == both.histogram(k).count());
    CHECK(a.histogram(k).quantile(0.95) == both.histogram(k).quantile(0.95));
  }
  CHECK(a.requests(tokchron::finish_reason::length) ==
        both.requests(tokchron::finish_reason::length));
  CHECK(a.output_tokens() == both.output_tokens());
  // Same buckets and counters; sums only to rounding (they add in a different order).
  const auto sa = a.snapshot(), sb = both.snapshot();
  REQUIRE(sa.families.size() == sb.families.size());
  for (std::size_t f = 0; f < sa.families.size(); ++f) {
    REQUIRE(sa.families[f].points.size() == sb.families[f].points.size());
    for (std::size_t p = 0; p < sa.families[f].points.size(); ++p) {
      const auto &x = sa.families[f].points[p], &y = sb.families[f].points[p];
      CHECK(x.value == y.value);
      CHECK(x.histogram.count == y.histogram.count);
      CHECK(x.histogram.sum == doctest::Approx(y.histogram.sum).epsilon(1e-12));
      REQUIRE(x.histogram.buckets.size() == y.histogram.buckets.size());
      for (std::size_t i = 0; i < x.histogram.buckets.size(); ++i)
        CHECK(x.histogram.buckets[i].cumulative_count == y.histogram.buckets[i].cumulative_count);
    }
  }
}

TEST_CASE("serving_metrics: golden exposition, tokchron and vLLM names") {
  tokchron::serving_metrics_options o;
  o.buckets = tokchron::bucket_layout::exponential(1, 0.004, 0.3);  // short enough to read
  o.labels = {{"model", "m"}};
  tokchron::serving_metrics m(o);
  CHECK(m.record(readme_timeline()));
  tokchron_test::check_golden("serving_metrics.prom", tokchron::to_prometheus(m.snapshot()));

  auto v = tokchron::serving_metrics_options::vllm();
  v.labels = {{"model_name", "m"}};
  tokchron::serving_metrics vm(v);
  CHECK(vm.record(readme_timeline()));
  const std::string t = tokchron::to_prometheus(vm.snapshot());
  tokchron_test::check_golden("serving_metrics_vllm.prom", t);
  CHECK(t.find("vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.25\"} 1\n") !=
        std::string::npos);
  CHECK(t.find("vllm:request_success_total{model_name=\"m\",finished_reason=\"stop\"} 1\n") !=
        std::string::npos);
}
