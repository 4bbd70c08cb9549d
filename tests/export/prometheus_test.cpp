// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "export/golden.hpp"
#include "tokchron/export/conversions.hpp"
#include "tokchron/export/prometheus.hpp"
#include "tokchron/export/promql.hpp"
#include "tokchron/exposition/buckets.hpp"
#include "tokchron/quantile/exact.hpp"
#include "tokchron/quantile/log_histogram.hpp"

using tokchron::metric_kind;

namespace {
tokchron::metrics_snapshot sample_snapshot() {
  tokchron::exact_quantiles<> ttft;
  for (double x : {0.0005, 0.003, 0.004, 0.019, 0.02, 0.3, 1.0, 3.0, 3000.0}) CHECK(ttft.add(x));
  tokchron::metrics_snapshot s;
  s.family("tokchron_requests", "Finished requests, by outcome.", metric_kind::counter)
      .add(40, {{"outcome", "stop"}})
      .add(2, {{"outcome", "length"}});
  s.family("tokchron_running_requests", "Requests being decoded.\nSecond \\ line \"quoted\".",
           metric_kind::gauge)
      .add(3.5, {{"note", "a\"b\\c\nd"}});
  s.family("tokchron_ttft_seconds", "Time to first token.", metric_kind::histogram, "seconds")
      .add(tokchron::classic_histogram(ttft, tokchron::vllm_ttft_buckets()), {{"model", "llama"}});
  s.family("tokchron_empty_seconds", "A family with no points yet.", metric_kind::histogram,
           "seconds");
  return s;
}
}  // namespace

TEST_CASE("prometheus text: golden 0.0.4 and OpenMetrics output") {
  const auto s = sample_snapshot();
  tokchron::prometheus_options o;
  o.const_labels = {{"replica", "r1"}};
  tokchron_test::check_golden("sample.prom", tokchron::to_prometheus(s, o));
  o.openmetrics = true;
  tokchron_test::check_golden("sample.openmetrics", tokchron::to_prometheus(s, o));
}

TEST_CASE("prometheus text: counters, escaping, cumulative buckets") {
  const std::string t = tokchron::to_prometheus(sample_snapshot());
  CHECK(t.find("# TYPE tokchron_requests_total counter\n") != std::string::npos);
  CHECK(t.find("tokchron_requests_total{outcome=\"stop\"} 40\n") != std::string::npos);
  CHECK(t.find("tokchron_running_requests{note=\"a\\\"b\\\\c\\nd\"} 3.5\n") != std::string::npos);
  // 0.0.4 HELP escapes backslash and newline only.
  CHECK(t.find("# HELP tokchron_running_requests Requests being decoded.\\nSecond \\\\ line "
               "\"quoted\".\n") != std::string::npos);
  // Samples <= le, by hand: 0.0005 | 0.003 0.004 | 0.019 0.02 | 0.3 | 1.0 | 3.0 | 3000 (> 2560).
  CHECK(t.find("tokchron_ttft_seconds_bucket{model=\"llama\",le=\"0.001\"} 1\n") !=
        std::string::npos);
  CHECK(t.find("le=\"0.005\"} 3\n") != std::string::npos);
  CHECK(t.find("le=\"0.02\"} 5\n") != std::string::npos);  // 0.02 itself is <= 0.02
  CHECK(t.find("le=\"0.25\"} 5\n") != std::string::npos);
  CHECK(t.find("le=\"1\"} 7\n") != std::string::npos);
  CHECK(t.find("le=\"2560\"} 8\n") != std::string::npos);
  CHECK(t.find("le=\"+Inf\"} 9\n") != std::string::npos);
  CHECK(t.find("tokchron_ttft_seconds_count{model=\"llama\"} 9\n") != std::string::npos);
}

TEST_CASE("prometheus text: numbers as prometheus-cpp writes them") {
  std::string s;
  tokchron::detail::append_prometheus_number(s, 0.1);
  s += ' ';
  tokchron::detail::append_prometheus_number(s, 1e-5);
  s += ' ';
  tokchron::detail::append_prometheus_number(s, std::numeric_limits<double>::infinity());
  s += ' ';
  tokchron::detail::append_prometheus_number(s, -std::numeric_limits<double>::infinity());
  s += ' ';
  tokchron::detail::append_prometheus_number(s, std::nan(""));
  s += ' ';
  tokchron::detail::append_prometheus_number(s, std::exp2(1.0 / 16));
  CHECK(s == "0.1 1e-05 +Inf -Inf NaN 1.044273782427414");
}

TEST_CASE("prometheus text: bad names are configuration errors and write nothing") {
  auto throws = [](tokchron::metrics_snapshot s) {
    std::string out = "kept";
    CHECK_THROWS_AS(tokchron::write_prometheus(out, s), std::invalid_argument);
    CHECK(out == "kept");
  };
  {
    tokchron::metrics_snapshot s;
    s.family("9bad", "h", metric_kind::gauge).add(1);
    throws(s);
  }
  {
    tokchron::metrics_snapshot s;
    s.family("ok", "h", metric_kind::gauge).add(1, {{"bad-name", "v"}});
    throws(s);
  }
  {
    tokchron::metrics_snapshot s;
    s.family("ok", "h", metric_kind::gauge).add(1, {{"__reserved", "v"}});
    throws(s);
  }
  {
    tokchron::metrics_snapshot s;
    s.family("ok", "h", metric_kind::gauge).add(1, {{"a", "v"}, {"a", "w"}});
    throws(s);
  }
  {
    tokchron::metrics_snapshot s;
    s.family("ok_seconds", "h", metric_kind::histogram)
        .add(tokchron::histogram_data{}, {{"le", "1"}});
    throws(s);
  }
  {
    tokchron::metrics_snapshot s;
    s.family("ok_total", "h", metric_kind::counter).add(1);
    throws(s);
  }
  {
    tokchron::metrics_snapshot s;
    s.family("ok_ms", "h", metric_kind::gauge, "seconds").add(1);
    throws(s);
  }
  {
    tokchron::metrics_snapshot s;
    s.family("dup", "h", metric_kind::gauge).add(1);
    s.family("dup", "h", metric_kind::gauge).add(2);
    throws(s);
  }
  {
    tokchron::histogram_data h;
    h.count = 3;
    h.buckets = {{1.0, 2}, {0.5, 3}};
    tokchron::metrics_snapshot s;
    s.family("h_seconds", "h", metric_kind::histogram).add(h);
    throws(s);
  }
  {
    tokchron::histogram_data h;
    h.count = 1;
    h.buckets = {{1.0, 2}};  // more below 1 than in total
    tokchron::metrics_snapshot s;
    s.family("h_seconds", "h", metric_kind::histogram).add(h);
    throws(s);
  }
  tokchron::exact_quantiles<> e;
  CHECK_THROWS_AS((void)tokchron::classic_histogram(e, {1.0, 1.0}), std::invalid_argument);
  CHECK_THROWS_AS((void)tokchron::classic_histogram(e, {std::nan("")}), std::invalid_argument);
}

TEST_CASE("exponential buckets: on log_histogram bucket edges") {
  for (int scale : {-1, 0, 2, 4, 5}) {
    CAPTURE(scale);
    const auto b = tokchron::exponential_buckets(scale, 1e-4, 100.0);
    REQUIRE(b.size() >= 2);
    CHECK(b.front() < 1e-4);
    CHECK(b[1] >= 1e-4);
    CHECK(b.back() >= 100.0);
    CHECK(b[b.size() - 2] < 100.0);
    const double base = std::exp2(std::ldexp(1.0, -scale));
    CHECK(tokchron::exponential_buckets_error(scale) == doctest::Approx(base - 1).epsilon(1e-12));
    // Each bound is a bucket's upper edge, bit for bit, at this and finer scales (the double
    // nearest the edge: when it rounds above the edge, index_of puts it in the next bucket).
    for (int finer : {scale, scale + 1, scale + 3}) {
      const auto layout = tokchron::log_histogram::with_scale(finer);
      for (std::size_t i = 1; i < b.size(); ++i) {
        const std::int32_t k = layout.index_of(b[i]);
        CHECK((layout.bucket_upper(k) == b[i] || layout.bucket_upper(k - 1) == b[i]));
      }
    }
    for (std::size_t i = 1; i < b.size(); ++i)
      CHECK(b[i] / b[i - 1] == doctest::Approx(base).epsilon(1e-12));
  }
  CHECK_THROWS_AS((void)tokchron::exponential_buckets(4, 0.0, 1.0), std::invalid_argument);
  CHECK_THROWS_AS((void)tokchron::exponential_buckets(4, 2.0, 1.0), std::invalid_argument);
  CHECK_THROWS_AS((void)tokchron::exponential_buckets(13, 1.0, 2.0), std::invalid_argument);
  CHECK_THROWS_AS((void)tokchron::exponential_buckets(12, 1e-9, 1e9), std::invalid_argument);
}

TEST_CASE("classic histogram of a log_histogram: lossless on its bucket edges") {
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> d(std::log(0.2), 1.0);
  for (int n : {5, 32, 33, 5000}) {
    CAPTURE(n);
    auto h = tokchron::log_histogram::with_scale(6);
    tokchron::exact_quantiles<> e;
    CHECK(h.add(0.0));
    CHECK(e.add(0.0));
    for (int i = 1; i < n; ++i) {
      const double x = d(rng);
      CHECK(h.add(x));
      CHECK(e.add(x));
    }
    for (int scale : {2, 4, 5}) {
      const auto bounds = tokchron::exponential_buckets(scale, 1e-3, 1e3);
      const auto a = tokchron::classic_histogram(h, bounds);
      const auto b = tokchron::classic_histogram(e, bounds);
      REQUIRE(a.buckets.size() == b.buckets.size());
      for (std::size_t i = 0; i < a.buckets.size(); ++i)
        CHECK(a.buckets[i].cumulative_count == b.buckets[i].cumulative_count);
      CHECK(a.count == b.count);
    }
    // Other bounds: each off by at most the one bucket straddling it.
    const auto bounds = tokchron::vllm_ttft_buckets();
    const auto a = tokchron::classic_histogram(h, bounds);
    for (std::size_t i = 0; i < bounds.size(); ++i) {
      CHECK(a.buckets[i].cumulative_count <= e.rank(bounds[i]));
      CHECK(a.buckets[i].cumulative_count >= e.rank(bounds[i] / h.base()));
    }
  }
}

TEST_CASE("exponential histogram data: dense, lossless") {
  auto h = tokchron::log_histogram::with_scale(3, 1e-6);
  for (double x : {0.0, 1e-7, 0.5, 1.0, 1.0, 3.0, -2.0, 100.0}) CHECK(h.add(x));
  const auto e = tokchron::exponential_histogram(h);
  CHECK(e.scale == 3);
  CHECK(e.zero_count == 2);
  CHECK(e.zero_threshold == 1e-6);
  std::uint64_t total = e.zero_count;
  for (auto c : e.positive_counts) total += c;
  for (auto c : e.negative_counts) total += c;
  CHECK(total == 8);
  CHECK(e.count == 8);
  // 0.5 = 2^-1 is the upper edge of bucket -9 at scale 3; 1.0 of bucket -1; 100 of bucket 53.
  CHECK(e.positive_offset == -9);
  CHECK(e.positive_counts.front() == 1);
  CHECK(e.positive_counts[8] == 2);
  CHECK(e.positive_offset + static_cast<std::int32_t>(e.positive_counts.size()) - 1 ==
        h.index_of(100.0));
  CHECK(e.negative_offset == h.index_of(2.0));
  CHECK(e.negative_counts == std::vector<std::uint64_t>{1});
  CHECK(*e.min == -2.0);
  CHECK(*e.max == 100.0);
}

TEST_CASE("promql_histogram_quantile: Prometheus' bucketQuantile by hand") {
  tokchron::histogram_data h;
  h.count = 10;
  h.buckets = {{1.0, 2}, {2.0, 6}, {4.0, 8}};
  CHECK(*tokchron::promql_histogram_quantile(0.1, h) ==
        doctest::Approx(0.5));  // rank 1 of 2 in (0, 1]
  CHECK(*tokchron::promql_histogram_quantile(0.4, h) ==
        doctest::Approx(1.5));  // rank 4: 2 of 4 in (1, 2]
  CHECK(*tokchron::promql_histogram_quantile(0.8, h) ==
        doctest::Approx(4.0));  // rank 8: top of (2, 4]
  CHECK(*tokchron::promql_histogram_quantile(0.95, h) == doctest::Approx(4.0));  // +Inf bucket
  CHECK_FALSE(tokchron::promql_histogram_quantile(0.5, tokchron::histogram_data{}));
  CHECK_FALSE(tokchron::promql_histogram_quantile(1.5, h));
}

TEST_CASE("exponential buckets: PromQL's interpolation stays within base - 1") {
  // The bound docs/library/exporters.md states: histogram_quantile answers inside the bucket
  // holding the nearest-rank sample quantile, so |answer / exact - 1| <= base - 1.
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> lognormal(std::log(0.05), 0.8);
  std::exponential_distribution<double> expo(20.0);
  for (int scale : {2, 3, 4, 5}) {
    for (int dist = 0; dist < 3; ++dist) {
      CAPTURE(scale);
      CAPTURE(dist);
      tokchron::exact_quantiles<> e;
      for (int i = 0; i < 20000; ++i) {
        double x = dist == 0   ? lognormal(rng)
                   : dist == 1 ? 1e-3 + expo(rng)
                               : 0.02 + 0.001 * (i % 7);
        x = std::clamp(x, 1e-3, 900.0);
        CHECK(e.add(x));
      }
      const auto h =
          tokchron::classic_histogram(e, tokchron::exponential_buckets(scale, 1e-3, 1e3));
      const double bound = tokchron::exponential_buckets_error(scale);
      double worst = 0;
      for (double q = 0.01; q < 0.9995; q += 0.005) {
        const double exact = *e.quantile(q, tokchron::quantile_method::nearest_rank);
        const double est = *tokchron::promql_histogram_quantile(q, h);
        worst = std::max(worst, std::fabs(est / exact - 1));
      }
      CHECK(worst <= bound * (1 + 1e-12));
      CHECK(worst > 0);  // the bound is not vacuous: interpolation does err
    }
  }
}
