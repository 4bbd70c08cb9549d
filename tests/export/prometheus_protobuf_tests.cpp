// SPDX-License-Identifier: MIT
// The protobuf exposition with native histograms (export/prometheus_protobuf.hpp): encoded by
// tokchron, decoded by protobuf's own parser, every field compared with the histogram it came
// from; the error bound after export; content negotiation; the refusals (docs/bad-input.md
// rows P1-P3); a golden file of the decoded messages.
#include <doctest/doctest.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/delimited_message_util.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "export/golden.hpp"
#include "io/prometheus/client/metrics.pb.h"
#include "tokchron/export/prometheus_protobuf.hpp"
#include "tokchron/export/promql.hpp"
#include "tokchron/quantile/exact.hpp"

namespace pb = io::prometheus::client;
using namespace tokchron;

namespace {

// Every MetricFamily of a delimited stream, by protobuf's parser; fails the test on bad bytes.
std::vector<pb::MetricFamily> decode(const std::string& bytes) {
  std::vector<pb::MetricFamily> out;
  google::protobuf::io::ArrayInputStream in(bytes.data(), static_cast<int>(bytes.size()));
  for (;;) {
    pb::MetricFamily f;
    bool clean_eof = false;
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&f, &in, &clean_eof)) {
      REQUIRE(clean_eof);
      return out;
    }
    out.push_back(std::move(f));
  }
}

// A native side as index (Prometheus numbering) -> count, from spans and deltas; checks the
// spans and deltas agree in length.
template <class Spans, class Deltas>
std::map<std::int64_t, std::int64_t> side(const Spans& spans, const Deltas& deltas) {
  std::map<std::int64_t, std::int64_t> out;
  std::int64_t index = 0, count = 0;
  int d = 0;
  for (int s = 0; s < spans.size(); ++s) {
    index += spans.Get(s).offset();
    for (std::uint32_t k = 0; k < spans.Get(s).length(); ++k, ++index) {
      REQUIRE(d < deltas.size());
      count += deltas.Get(d++);
      CHECK(count >= 0);
      if (count != 0) out[index] = count;
    }
  }
  CHECK(d == deltas.size());
  return out;
}

// The same side of a log_histogram, in Prometheus numbering (OpenTelemetry index + 1).
std::map<std::int64_t, std::int64_t> side(const log_histogram::bucket_range& r) {
  std::map<std::int64_t, std::int64_t> out;
  for (const auto b : r)
    out[static_cast<std::int64_t>(b.index) + 1] = static_cast<std::int64_t>(b.count);
  return out;
}

// Checks a decoded Histogram message against the classic data and log_histogram it came from.
void check_histogram(const pb::Histogram& h, const histogram_data& classic,
                     const log_histogram& src) {
  CHECK(h.sample_count() == classic.count);
  CHECK(h.sample_sum() == classic.sum);
  REQUIRE(h.bucket_size() == static_cast<int>(classic.buckets.size()) + 1);
  for (std::size_t i = 0; i < classic.buckets.size(); ++i) {
    CHECK(h.bucket(static_cast<int>(i)).upper_bound() == classic.buckets[i].upper_bound);
    CHECK(h.bucket(static_cast<int>(i)).cumulative_count() == classic.buckets[i].cumulative_count);
  }
  CHECK(std::isinf(h.bucket(h.bucket_size() - 1).upper_bound()));
  CHECK(h.bucket(h.bucket_size() - 1).cumulative_count() == classic.count);
  const log_histogram native = src.scale() > 8 ? src.downscaled(8) : src;
  REQUIRE(h.has_schema());
  CHECK(h.schema() == native.scale());
  // A threshold of 0 is written as 2^-128 unless a bucket lies below it (the encoder's
  // native_zero_threshold): Prometheus 2.42 reads an empty histogram as native only so.
  double threshold = native.zero_threshold();
  if (threshold == 0) {
    threshold = 0x1p-128;
    for (const auto& r : {native.positive_buckets(), native.negative_buckets()})
      if (!r.empty() && native.bucket_lower(r.first_index()) < 0x1p-128) threshold = 0;
  }
  CHECK(h.zero_threshold() == threshold);
  CHECK(h.zero_count() == native.zero_count());
  CHECK(side(h.positive_span(), h.positive_delta()) == side(native.positive_buckets()));
  CHECK(side(h.negative_span(), h.negative_delta()) == side(native.negative_buckets()));
}

log_histogram samples_histogram(int scale, std::uint64_t seed, int n, double zero_threshold = 0) {
  auto h = log_histogram::with_scale(scale, zero_threshold);
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> d(std::log(0.2), 0.8);
  for (int i = 0; i < n; ++i) h.add(d(rng));
  return h;
}

}  // namespace

TEST_CASE(
    "prometheus protobuf: serving_metrics round-trip through protobuf's parser, every field") {
  serving_metrics_options o;
  o.scale = prometheus_native_scale_for(0.01);
  o.labels = {{"replica", "r1"}, {"model", "m \"x\"\n"}};
  serving_metrics m(o);
  for (int i = 0; i < 50; ++i) {
    auto s = testing::script();
    using std::chrono::microseconds;
    s.arrive(microseconds(0))
        .scheduled(microseconds(1000 + 37 * i))
        .chunk(microseconds(90000 + 9001 * i), 1);
    s.chunk(microseconds(200000 + 9001 * i), 2)
        .prompt_tokens(10 + i)
        .finish(microseconds(200000 + 9001 * i));
    REQUIRE(m.record(s.timeline()));
  }
  prometheus_options po;
  po.const_labels = {{"job_kind", "test"}};
  const auto snap = m.snapshot();
  const auto families = decode(to_prometheus_protobuf(snap, prometheus_native_histograms(m), po));
  REQUIRE(families.size() == snap.families.size());
  for (std::size_t f = 0; f < families.size(); ++f) {
    const auto& want = snap.families[f];
    const auto& got = families[f];
    CAPTURE(want.name);
    const bool counter = want.kind == metric_kind::counter;
    CHECK(got.name() == (counter ? want.name + "_total" : want.name));
    CHECK(got.help() == want.help);
    CHECK(got.unit() == want.unit);
    CHECK(got.type() == (counter                           ? pb::COUNTER
                         : want.kind == metric_kind::gauge ? pb::GAUGE
                                                           : pb::HISTOGRAM));
    REQUIRE(got.metric_size() == static_cast<int>(want.points.size()));
    for (std::size_t p = 0; p < want.points.size(); ++p) {
      const auto& gm = got.metric(static_cast<int>(p));
      const auto& wp = want.points[p];
      REQUIRE(gm.label_size() == static_cast<int>(wp.labels.size() + 1));
      CHECK(gm.label(0).name() == "job_kind");
      CHECK(gm.label(0).value() == "test");
      for (std::size_t l = 0; l < wp.labels.size(); ++l) {
        CHECK(gm.label(static_cast<int>(l + 1)).name() == wp.labels[l].name);
        CHECK(gm.label(static_cast<int>(l + 1)).value() == wp.labels[l].value);
      }
      if (counter) {
        CHECK(gm.counter().value() == wp.value);
      } else {
        REQUIRE(gm.has_histogram());
        const auto id =
            std::find_if(std::begin(metric_table), std::end(metric_table), [&](const auto& d) {
              return d.served && o.names[d.id] == want.name;
            })->id;
        check_histogram(gm.histogram(), wp.histogram, m.histogram(id));
        CHECK(m.histogram(id).scale() == 7);
      }
    }
  }
}

TEST_CASE("prometheus protobuf: negative, zero and sparse buckets; finer scales downscaled to 8") {
  for (const int scale : {-4, 0, 3, 8, 10}) {
    CAPTURE(scale);
    auto h = log_histogram::with_scale(scale, 1e-6);
    for (const double x :
         {0.0, 5e-7, -5e-7, 1e-3, 1e-3, 0.5, 0.51, 1.0, 4.0, 1e3, -2.0, -2.0, -0.25})
      REQUIRE(h.add(x));
    for (int i = 0; i < 300; ++i) h.add(0.1 * std::pow(1.001, i));  // long dense runs
    metrics_snapshot s;
    const auto classic = classic_histogram(h, exponential_buckets(3, 1e-3, 10));
    s.family("x_seconds", "x", metric_kind::histogram, "seconds").add(classic, {{"a", "b"}});
    const auto fams =
        decode(to_prometheus_protobuf(s, {{"x_seconds", {{"a", "b"}}, prometheus_native_data(h)}}));
    REQUIRE(fams.size() == 1);
    check_histogram(fams[0].metric(0).histogram(), classic, h);
    CHECK(fams[0].metric(0).histogram().schema() == std::min(scale, 8));
  }
}

TEST_CASE("prometheus protobuf: a native histogram reads as native before its first sample") {
  // Prometheus 2.42 takes a protobuf histogram for native only with a bucket, a zero count or a
  // zero threshold above 0: an empty one is written with the threshold 2^-128.
  metrics_snapshot s;
  const auto h = log_histogram::with_scale(5);
  s.family("e_seconds", "e", metric_kind::histogram, "seconds").add(classic_histogram(h, {0.1, 1}));
  const auto fams =
      decode(to_prometheus_protobuf(s, {{"e_seconds", {}, prometheus_native_data(h)}}));
  const auto& hist = fams.at(0).metric(0).histogram();
  CHECK(hist.schema() == 5);
  CHECK(hist.zero_threshold() == 0x1p-128);
  CHECK(hist.zero_count() == 0);
  CHECK(hist.positive_span_size() == 0);
  CHECK(hist.positive_delta_size() == 0);
  // Without native data the same family is classic only (no schema field).
  const auto classic_only = decode(to_prometheus_protobuf(s));
  CHECK_FALSE(classic_only.at(0).metric(0).histogram().has_schema());
  CHECK_FALSE(classic_only.at(0).metric(0).histogram().has_zero_threshold());
  // A sample below 2^-128 keeps the threshold at 0 (the zero bucket must not swallow it).
  auto tiny = log_histogram::with_scale(0);
  REQUIRE(tiny.add(1e-40));
  metrics_snapshot t;
  t.family("t_seconds", "t", metric_kind::histogram, "seconds").add(classic_histogram(tiny, {1}));
  const auto tf =
      decode(to_prometheus_protobuf(t, {{"t_seconds", {}, prometheus_native_data(tiny)}}));
  check_histogram(tf.at(0).metric(0).histogram(), classic_histogram(tiny, {1}), tiny);
  CHECK(tf.at(0).metric(0).histogram().zero_threshold() == 0);
}

TEST_CASE("prometheus protobuf: gauges and counters") {
  metrics_snapshot s;
  s.family("g", "a gauge", metric_kind::gauge).add(2.5).add(-1, {{"k", "v"}});
  s.family("c", "a counter", metric_kind::counter).add(7);
  const auto fams = decode(to_prometheus_protobuf(s));
  REQUIRE(fams.size() == 2);
  CHECK(fams[0].type() == pb::GAUGE);
  CHECK(fams[0].metric(0).gauge().value() == 2.5);
  CHECK(fams[0].metric(1).gauge().value() == -1);
  CHECK(fams[0].metric(1).label(0).value() == "v");
  CHECK(fams[1].name() == "c_total");
  CHECK(fams[1].type() == pb::COUNTER);
  CHECK(fams[1].metric(0).counter().value() == 7);
  // A family written without `_total` in the text format (TGI's counters) keeps its name here.
  s.family("tgi_request_success", "a counter without _total", metric_kind::counter)
      .add(3)
      .total_suffix = false;
  const auto again = decode(to_prometheus_protobuf(s));
  REQUIRE(again.size() == 3);
  CHECK(again[2].name() == "tgi_request_success");
  CHECK(to_prometheus(s).find("\ntgi_request_success 3\n") != std::string::npos);
}

TEST_CASE("prometheus protobuf: schemas and bounds") {
  // base - 1 at each schema; the coarsest schema whose PromQL error is within alpha.
  CHECK(prometheus_native_quantile_error(8) ==
        doctest::Approx(std::exp2(1.0 / 256) - 1).epsilon(1e-12));
  CHECK(prometheus_native_quantile_error(0) == doctest::Approx(1.0).epsilon(1e-12));
  CHECK(prometheus_native_quantile_error(-4) == doctest::Approx(65535.0).epsilon(1e-12));
  CHECK(prometheus_native_scale_for(0.01) == 7);
  CHECK(prometheus_native_scale_for(0.0109) == 6);
  CHECK(prometheus_native_scale_for(0.003) == 8);
  CHECK(prometheus_native_scale_for(0.5) == 1);
  for (int s = -4; s <= 8; ++s) {
    // From scale -1 up, two scales finer is enough; one scale finer never is
    // (docs/library/exporters.md).
    if (s >= -1 && s + 2 <= 8)
      CHECK(prometheus_native_quantile_error(s + 2) <= log_histogram::relative_error_for(s));
    if (s + 1 <= 8)
      CHECK(prometheus_native_quantile_error(s + 1) > log_histogram::relative_error_for(s));
  }
}

TEST_CASE(
    "prometheus protobuf: the error bound holds after export, midpoint and PromQL's "
    "interpolation") {
  // Decode the native buckets; a midpoint answer (2LU/(L+U)) of the bucket holding each rank is
  // within log_histogram's bound at the exported schema, PromQL's linear interpolation within
  // base - 1; both against the exact nearest-rank quantile of the same samples.
  for (const int scale : {3, 6, 7, 8, 10}) {
    CAPTURE(scale);
    auto h = log_histogram::with_scale(scale);
    exact_quantiles<double> exact;
    std::mt19937_64 rng(static_cast<std::uint64_t>(scale) + 5);
    std::lognormal_distribution<double> d(std::log(0.3), 1.0);
    for (int i = 0; i < 20000; ++i) {
      const double x = d(rng);
      h.add(x);
      exact.add(x);
    }
    metrics_snapshot s;
    s.family("t_seconds", "t", metric_kind::histogram, "seconds").add(classic_histogram(h, {1.0}));
    const auto fams =
        decode(to_prometheus_protobuf(s, {{"t_seconds", {}, prometheus_native_data(h)}}));
    const auto& ph = fams.at(0).metric(0).histogram();
    const int schema = ph.schema();
    CHECK(schema == std::min(scale, 8));
    const auto buckets = side(ph.positive_span(), ph.positive_delta());
    // Rebuild the exported data from the decoded message alone.
    exponential_histogram_data e;
    e.scale = schema;
    e.count = ph.sample_count();
    e.zero_count = ph.zero_count();
    e.zero_threshold = ph.zero_threshold();
    e.positive_offset = static_cast<std::int32_t>(buckets.begin()->first - 1);
    e.positive_counts.assign(
        static_cast<std::size_t>(buckets.rbegin()->first - buckets.begin()->first + 1), 0);
    for (const auto& [i, c] : buckets)
      e.positive_counts[static_cast<std::size_t>(i - buckets.begin()->first)] =
          static_cast<std::uint64_t>(c);
    const auto layout = log_histogram::with_scale(schema);
    const double mid_bound = log_histogram::relative_error_for(schema);
    const double promql_bound = prometheus_native_quantile_error(schema);
    double worst_mid = 0, worst_promql = 0;
    for (double q = 0.01; q < 1.0; q += 0.01) {
      const double truth = *exact.quantile(q, quantile_method::nearest_rank);
      // The bucket holding rank ceil(q n) (nearest rank).
      const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(e.count)));
      std::uint64_t cum = 0;
      std::size_t k = 0;
      for (; k < e.positive_counts.size(); ++k)
        if ((cum += e.positive_counts[k]) >= rank) break;
      const auto i = e.positive_offset + static_cast<std::int32_t>(k);
      const double mid = layout.bucket_value(i);
      worst_mid = std::max(worst_mid, std::fabs(mid / truth - 1));
      const double promql = *promql_native_histogram_quantile(q, e);
      worst_promql = std::max(worst_promql, std::fabs(promql / truth - 1));
    }
    CHECK(worst_mid <= mid_bound);
    CHECK(worst_promql <= promql_bound);
    if (scale <= 8) CHECK(mid_bound == h.relative_error());  // lossless: the sketch's own bound
  }
}

TEST_CASE("prometheus protobuf: PromQL's native algorithm, by hand") {
  exponential_histogram_data e;
  e.scale = 0;  // buckets (1, 2], (2, 4]
  e.count = 4;
  e.positive_offset = 0;
  e.positive_counts = {2, 2};
  CHECK(*promql_native_histogram_quantile(0.25, e) == doctest::Approx(1.5));
  CHECK(*promql_native_histogram_quantile(0.5, e) == doctest::Approx(2.0));
  CHECK(*promql_native_histogram_quantile(0.75, e) == doctest::Approx(3.0));
  CHECK(*promql_native_histogram_quantile(1.0, e) == doctest::Approx(4.0));
  e.zero_count = 4;
  e.zero_threshold = 0.5;
  e.count = 8;
  CHECK(*promql_native_histogram_quantile(0.25, e) == doctest::Approx(0.25));  // zero bucket from 0
  e.negative_offset = 1;                                                       // (-4, -2]
  e.negative_counts = {4};
  e.count = 12;
  CHECK(*promql_native_histogram_quantile(0.25, e) == doctest::Approx(-2.5));  // rank 3 of 4 in it
  CHECK(*promql_native_histogram_quantile(0.5, e) ==
        doctest::Approx(0.0));  // zero bucket -0.5..0.5
  CHECK_FALSE(promql_native_histogram_quantile(0.0, e));
  CHECK_FALSE(promql_native_histogram_quantile(0.5, exponential_histogram_data{}));
}

TEST_CASE(
    "prometheus protobuf: classic buckets on a native schema's edges become a native histogram") {
  const auto h = samples_histogram(6, 3, 5000, 0);
  const auto bounds = exponential_buckets(4, 0.05, 10);
  const auto classic = classic_histogram(h, bounds);
  const auto e = prometheus_native_from_classic(classic);
  REQUIRE(e);
  CHECK(e->scale == 4);
  CHECK(e->zero_threshold == bounds.front());
  CHECK(e->zero_count == h.rank(bounds.front()));
  const auto coarse = h.downscaled(4);
  std::uint64_t total = e->zero_count;
  for (std::size_t k = 0; k < e->positive_counts.size(); ++k) {
    const auto i = e->positive_offset + static_cast<std::int32_t>(k);
    CHECK(coarse.bucket_lower(i) == bounds[k]);
    std::uint64_t want = 0;
    for (const auto b : coarse.positive_buckets())
      if (b.index == i) want = b.count;
    CHECK(e->positive_counts[k] == want);
    total += e->positive_counts[k];
  }
  CHECK(total == h.count());
  // The snapshot form picks the histograms that qualify.
  metrics_snapshot s;
  s.family("a_seconds", "a", metric_kind::histogram, "seconds").add(classic);
  s.family("b_seconds", "b", metric_kind::histogram, "seconds")
      .add(classic_histogram(h, {0.1, 0.25, 1, 10}));
  const auto natives = prometheus_native_from_classic(s);
  REQUIRE(natives.size() == 1);
  CHECK(natives[0].family == "a_seconds");
  // A sample above the last bound, or bounds on no schema: classic only.
  CHECK_FALSE(
      prometheus_native_from_classic(classic_histogram(h, exponential_buckets(4, 0.05, 0.5))));
  CHECK_FALSE(prometheus_native_from_classic(classic_histogram(h, {0.1, 0.25, 1, 10, 100})));
  CHECK_FALSE(prometheus_native_from_classic(histogram_data{}));
}

TEST_CASE("prometheus protobuf: content negotiation") {
  // Prometheus 2.42's Accept headers (scrape/scrape.go: scrapeAcceptHeader and, with
  // --enable-feature=native-histograms, scrapeAcceptHeaderWithProtobuf).
  CHECK(negotiate_exposition(
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
            "encoding=delimited;q=0.8,application/openmetrics-text;version=1.0.0;q=0.7,"
            "application/openmetrics-text;version=0.0.1;q=0.6,"
            "text/plain;version=0.0.4;q=0.5,*/*;q=0.4") == exposition_format::protobuf);
  CHECK(negotiate_exposition(
            "application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
            "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1") ==
        exposition_format::openmetrics);
  CHECK(negotiate_exposition("text/plain") == exposition_format::text);
  CHECK(negotiate_exposition("") == exposition_format::text);
  CHECK(negotiate_exposition("*/*") == exposition_format::text);
  CHECK(negotiate_exposition("text/plain;q=0.5, application/vnd.google.protobuf; "
                             "proto=\"io.prometheus.client.MetricFamily\"; encoding=delimited") ==
        exposition_format::protobuf);
  CHECK(negotiate_exposition(
            "Application/Vnd.Google.Protobuf;proto=io.prometheus.client.MetricFamily;"
            "encoding=DELIMITED") == exposition_format::protobuf);
  CHECK(content_type(exposition_format::protobuf) == prometheus_protobuf_content_type);
  CHECK(content_type(exposition_format::text) == prometheus_content_type);
}

TEST_CASE("bad input P1: to_prometheus_protobuf refuses inconsistent native points") {
  const auto h = samples_histogram(5, 1, 100);
  metrics_snapshot s;
  s.family("x_seconds", "x", metric_kind::histogram, "seconds")
      .add(classic_histogram(h, {0.1, 1}), {{"a", "1"}});
  s.family("c", "c", metric_kind::counter).add(1);
  const auto good = prometheus_native_data(h);
  auto refused = [&](const std::vector<native_histogram_point>& n, const char* what) {
    CAPTURE(what);
    try {
      (void)to_prometheus_protobuf(s, n);
      FAIL("not refused");
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()).find(what) != std::string::npos);
    }
  };
  refused({{"y_seconds", {{"a", "1"}}, good}}, "without a classic point");
  refused({{"x_seconds", {{"a", "2"}}, good}}, "without a classic point");
  refused({{"c", {}, good}}, "non-histogram");
  refused({{"x_seconds", {{"a", "1"}}, good}, {"x_seconds", {{"a", "1"}}, good}},
          "two native points");
  auto bad = good;
  bad.count += 1;
  refused({{"x_seconds", {{"a", "1"}}, bad}}, "differs from the classic count");
  bad = good;
  bad.positive_counts.back() += 1;
  refused({{"x_seconds", {{"a", "1"}}, bad}}, "do not add up");
  bad = good;
  bad.scale = 9;
  refused({{"x_seconds", {{"a", "1"}}, bad}}, "outside -4..8");
  bad = good;
  bad.zero_threshold = std::numeric_limits<double>::quiet_NaN();
  refused({{"x_seconds", {{"a", "1"}}, bad}}, "zero threshold");
  // The text writer's own checks apply too (an invalid name).
  metrics_snapshot invalid;
  invalid.family("bad name", "x", metric_kind::gauge).add(1);
  CHECK_THROWS_AS((void)to_prometheus_protobuf(invalid), std::invalid_argument);
  CHECK_NOTHROW((void)to_prometheus_protobuf(s, {{"x_seconds", {{"a", "1"}}, good}}));
}

TEST_CASE("bad input P2: schemas Prometheus cannot carry") {
  CHECK_THROWS_AS((void)prometheus_native_data(log_histogram::with_scale(-5)),
                  std::invalid_argument);
  CHECK(prometheus_native_data(log_histogram::with_scale(12)).scale == 8);
  CHECK_THROWS_AS((void)prometheus_native_scale_for(0.002), std::invalid_argument);
  CHECK_THROWS_AS((void)prometheus_native_scale_for(1.0), std::invalid_argument);
  CHECK_THROWS_AS((void)prometheus_native_scale_for(std::numeric_limits<double>::quiet_NaN()),
                  std::invalid_argument);
  CHECK_THROWS_AS((void)prometheus_native_quantile_error(9), std::invalid_argument);
  CHECK_THROWS_AS((void)prometheus_native_quantile_error(-5), std::invalid_argument);
}

TEST_CASE("bad input P3: Accept headers that offer nothing usable answer text") {
  for (const char* accept :
       {"application/vnd.google.protobuf",
        "application/vnd.google.protobuf;proto=other.Message;encoding=delimited",
        "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text",
        "application/"
        "vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0",
        "application/"
        "vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=2",
        "application/"
        "vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.x",
        "application/json", ",,,;;;===", "image/png;q=1"})
    CHECK_MESSAGE(negotiate_exposition(accept) == exposition_format::text, accept);
  CHECK(negotiate_exposition(std::string(100000, ',')) == exposition_format::text);
}

TEST_CASE("prometheus protobuf: golden file of the decoded messages") {
  serving_metrics_options o;
  o.scale = 7;
  o.buckets = bucket_layout::exponential(0, 0.005, 0.2);
  serving_metrics m(o);
  REQUIRE(m.record(tokchron_test::readme_timeline()));
  std::string text;
  for (const auto& f :
       decode(to_prometheus_protobuf(m.snapshot(), prometheus_native_histograms(m)))) {
    std::string one;
    REQUIRE(google::protobuf::TextFormat::PrintToString(f, &one));
    text += "# MetricFamily\n" + one;
  }
  tokchron_test::check_golden("serving_metrics_native.pbtxt", text);
}
