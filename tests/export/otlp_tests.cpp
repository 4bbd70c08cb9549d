// SPDX-License-Identifier: MIT
// OTLP JSON of log_histogram (export/otlp.hpp, an nlohmann-json adaptor): its own binary.
#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "export/golden.hpp"
#include "tokchron/export/otlp.hpp"

namespace {
// scale 1 (base sqrt 2): 1.0 in bucket -1 = (2^-1/2, 1], 1.5 in 1 = (2^1/2, 2], 3.0 in 3 =
// (2^3/2, 4]; 0 in the zero bucket; -0.5 = -(2^-1) in negative bucket -3 = (2^-3/2, 2^-1].
tokchron::log_histogram hand_checked() {
  auto h = tokchron::log_histogram::with_scale(1);
  for (double x : {0.0, 1.0, 1.5, 3.0, -0.5}) CHECK(h.add(x));
  return h;
}
}  // namespace

TEST_CASE("OTLP ExponentialHistogram data point: a hand-checked example") {
  const auto p = tokchron::otlp_data_point(tokchron::exponential_histogram(hand_checked()),
                                           {{"metric", "ttft"}}, 1000, 2000);
  CHECK(p.dump() ==
        R"({"attributes":[{"key":"metric","value":{"stringValue":"ttft"}}],)"
        R"("startTimeUnixNano":"1000","timeUnixNano":"2000","count":"5","sum":5.0,"scale":1,)"
        R"("zeroCount":"1","positive":{"offset":-1,"bucketCounts":["1","0","1","0","1"]},)"
        R"("negative":{"offset":-3,"bucketCounts":["1"]},"min":-0.5,"max":3.0,)"
        R"("zeroThreshold":0.0})");
}

TEST_CASE("OTLP JSON: only the specification's field names, 64-bit integers as strings") {
  // opentelemetry-proto metrics.proto, ExponentialHistogramDataPoint and its Buckets, in
  // the OTLP/JSON lowerCamelCase form.
  const std::set<std::string> point_fields = {
      "attributes", "startTimeUnixNano", "timeUnixNano", "count", "sum",       "scale",
      "zeroCount",  "positive",          "negative",     "flags", "exemplars", "min",
      "max",        "zeroThreshold"};
  const std::set<std::string> bucket_fields = {"offset", "bucketCounts"};
  auto h = hand_checked();
  for (int i = 0; i < 100; ++i) CHECK(h.add(0.01 * (i + 1)));
  const auto req = tokchron::otlp_metrics(
      {{"tokchron.ttft", "Time to first token.", "s", tokchron::exponential_histogram(h), {}}},
      {{"service.name", "replica-1"}}, 1, 2);
  const auto& rm = req.at("resourceMetrics").at(0);
  CHECK(rm.at("resource").at("attributes").at(0).at("key") == "service.name");
  const auto& sm = rm.at("scopeMetrics").at(0);
  CHECK(sm.at("scope").at("name") == "tokchron");
  const auto& m = sm.at("metrics").at(0);
  CHECK(m.at("name") == "tokchron.ttft");
  CHECK(m.at("unit") == "s");
  const auto& eh = m.at("exponentialHistogram");
  CHECK(eh.at("aggregationTemporality") == 2);
  const auto& p = eh.at("dataPoints").at(0);
  for (auto it = p.begin(); it != p.end(); ++it) {
    const std::string key = it.key();
    CAPTURE(key);
    CHECK(point_fields.count(key) == 1);
  }
  for (const char* side : {"positive", "negative"})
    for (auto it = p.at(side).begin(); it != p.at(side).end(); ++it)
      CHECK(bucket_fields.count(it.key()) == 1);
  CHECK(p.at("count").is_string());
  CHECK(p.at("zeroCount").is_string());
  CHECK(p.at("timeUnixNano").is_string());
  CHECK(p.at("scale").is_number_integer());
  CHECK(p.at("positive").at("offset").is_number_integer());
  std::uint64_t total = std::stoull(p.at("zeroCount").get<std::string>());
  for (const char* side : {"positive", "negative"})
    for (const auto& c : p.at(side).at("bucketCounts")) {
      REQUIRE(c.is_string());
      total += std::stoull(c.get<std::string>());
    }
  CHECK(total == std::stoull(p.at("count").get<std::string>()));
  CHECK(total == 105);
  tokchron_test::check_golden("otlp_request.json", req.dump(2) + "\n");
}

TEST_CASE("OTLP JSON: an empty histogram has no sum, min, max or buckets") {
  const auto p = tokchron::otlp_data_point(
      tokchron::exponential_histogram(tokchron::log_histogram::with_scale(4)), {}, 0, 0);
  CHECK(p.dump() ==
        R"({"startTimeUnixNano":"0","timeUnixNano":"0","count":"0","scale":4,"zeroCount":"0",)"
        R"("zeroThreshold":0.0})");
}

TEST_CASE("OTLP JSON of serving_metrics: one histogram per served metric, named from the table") {
  tokchron::serving_metrics sm;
  REQUIRE(sm.record(tokchron_test::readme_timeline()));
  const auto hs = tokchron::otlp_histograms(sm, {{"model", "m"}});
  REQUIRE(hs.size() == tokchron::serving_metric_count);
  std::size_t i = 0;
  for (const auto& d : tokchron::metric_table) {
    if (!d.served) continue;
    CAPTURE(d.name);
    const auto& h = hs[i++];
    CHECK(h.name == "tokchron." + std::string(d.name));
    CHECK(h.description == d.help);
    CHECK(h.unit == "s");
    CHECK(h.data.count == sm.histogram(d.id).count());
    CHECK(h.data.sum == sm.histogram(d.id).sum());
    REQUIRE(h.attributes.size() == 1);
  }
  const auto req = tokchron::otlp_metrics(hs, {}, 0, 1);
  const auto& metrics = req.at("resourceMetrics").at(0).at("scopeMetrics").at(0).at("metrics");
  CHECK(metrics.size() == tokchron::serving_metric_count);
  CHECK(metrics.at(0).at("name") == "tokchron.ttft");
}

TEST_CASE("OTLP JSON of the GenAI server metrics: the conventions' names, buckets, attributes") {
  // A scrape of otel_live_options built by hand: one series, TTFT buckets with 2 samples at or
  // below 0.01 s and 1 above 10 s; the other two families absent.
  tokchron::metrics_snapshot s;
  tokchron::histogram_data h;
  for (const double b : {0.001, 0.005, 0.01}) h.buckets.push_back({b, b < 0.005 ? 1u : 2u});
  h.count = 3;
  h.sum = 12.5;
  s.family("gen_ai_server_time_to_first_token_seconds", "", tokchron::metric_kind::histogram)
      .add(h, {{"gen_ai_operation_name", "chat"},
               {"gen_ai_provider_name", "tokchron"},
               {"gen_ai_request_model", "m"},
               {"other", "x"}});
  s.family("tokchron_misuse", "", tokchron::metric_kind::counter).add(0.0);
  const auto hs = tokchron::otlp_genai_histograms(s);
  REQUIRE(hs.size() == 1);
  CHECK(hs[0].name == "gen_ai.server.time_to_first_token");
  CHECK(hs[0].unit == "s");
  CHECK(hs[0].description == "Time to generate first token for successful responses.");
  CHECK(hs[0].bounds == std::vector<double>{0.001, 0.005, 0.01});
  CHECK(hs[0].counts == std::vector<std::uint64_t>{1, 1, 0, 1});  // not cumulative; +Inf last
  const auto j = tokchron::otlp_metrics({}, hs, {}, 1000, 2000);
  const auto& m = j["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0];
  CHECK(m["histogram"]["aggregationTemporality"] == 2);
  const auto& p = m["histogram"]["dataPoints"][0];
  CHECK(p["count"] == "3");
  CHECK(p["bucketCounts"].dump() == R"(["1","1","0","1"])");
  CHECK(p["explicitBounds"].dump() == "[0.001,0.005,0.01]");
  CHECK(p["attributes"].dump() ==
        R"([{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}},)"
        R"({"key":"gen_ai.provider.name","value":{"stringValue":"tokchron"}},)"
        R"({"key":"gen_ai.request.model","value":{"stringValue":"m"}},)"
        R"({"key":"other","value":{"stringValue":"x"}}])");

  // A failed request's duration point: error_type back to error.type; the two points of one
  // metric in one Metric (consecutive entries of one name), an int attribute as intValue.
  tokchron::histogram_data d;
  d.buckets.push_back({0.01, 0});
  d.count = 1;
  d.sum = 0.5;
  auto& dur =
      s.family("gen_ai_server_request_duration_seconds", "", tokchron::metric_kind::histogram);
  dur.add(d, {{"gen_ai_operation_name", "chat"}});
  dur.add(d, {{"gen_ai_operation_name", "chat"}, {"error_type", "timeout"}});
  auto two = tokchron::otlp_genai_histograms(s);
  REQUIRE(two.size() == 3);
  CHECK(two[0].name == "gen_ai.server.request.duration");
  CHECK(two[1].attributes.back().name == "error.type");
  CHECK(tokchron::otlp_same_metric(two[0], two[1]));
  CHECK(!tokchron::otlp_same_metric(two[1], two[2]));
  two[1].int_attributes = {{"server.port", 8000}};
  const auto k = tokchron::otlp_metrics({}, two, {}, 1000, 2000);
  const auto& ms = k["resourceMetrics"][0]["scopeMetrics"][0]["metrics"];
  REQUIRE(ms.size() == 2);
  REQUIRE(ms[0]["histogram"]["dataPoints"].size() == 2);
  CHECK(ms[0]["histogram"]["dataPoints"][1]["attributes"].dump() ==
        R"([{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}},)"
        R"({"key":"error.type","value":{"stringValue":"timeout"}},)"
        R"({"key":"server.port","value":{"intValue":"8000"}}])");
  CHECK(ms[1]["name"] == "gen_ai.server.time_to_first_token");
}
