// SPDX-License-Identifier: MIT
// OTLP/HTTP protobuf (export/otlp_protobuf.hpp): the request tokchron encodes, decoded by
// protobuf's own parser, every field against the histograms it came from; and the same request
// as OTLP/JSON (export/otlp.hpp), read by protobuf's own JSON parser into the same messages,
// serialises to the same bytes.
#include <doctest/doctest.h>
#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "tokchron/export/otlp_protobuf.hpp"
#include "tokchron/version.hpp"

namespace otlp = opentelemetry::proto::collector::metrics::v1;
using namespace tokchron;

namespace {

std::vector<otlp_histogram> known_histograms() {
  std::vector<otlp_histogram> out;
  std::mt19937_64 rng(35);
  std::lognormal_distribution<double> d(std::log(0.2), 1.2);
  const struct {
    int scale;
    double zero_threshold;
    bool negatives;
    int n;
  } cases[] = {{-3, 0, false, 300},
               {0, 0, true, 300},
               {6, 1e-3, true, 3000},
               {12, 0, false, 500},
               {4, 0, false, 0}};
  for (const auto& c : cases) {
    auto h = log_histogram::with_scale(c.scale, c.zero_threshold);
    for (int i = 0; i < c.n; ++i) h.add(d(rng));
    if (c.negatives)
      for (const double x : {-0.5, -3.0, -1e-4, 0.0}) h.add(x);
    out.push_back({"tokchron.test.scale_" + std::to_string(c.scale),
                   "a test histogram",
                   "s",
                   exponential_histogram(h),
                   {{"case", std::to_string(c.scale)}}});
  }
  return out;
}

}  // namespace

TEST_CASE("OTLP protobuf: every field decoded by protobuf's parser equals the source") {
  const auto hs = known_histograms();
  const label_set resource = {{"service.name", "test"}, {"service.instance.id", "r1"}};
  otlp::ExportMetricsServiceRequest req;
  REQUIRE(req.ParseFromString(
      otlp_metrics_protobuf(hs, resource, 1000, 2000, otlp_temporality::delta)));
  REQUIRE(req.resource_metrics_size() == 1);
  const auto& rm = req.resource_metrics(0);
  REQUIRE(rm.resource().attributes_size() == 2);
  for (int i = 0; i < 2; ++i) {
    CHECK(rm.resource().attributes(i).key() == resource[static_cast<std::size_t>(i)].name);
    CHECK(rm.resource().attributes(i).value().string_value() ==
          resource[static_cast<std::size_t>(i)].value);
  }
  REQUIRE(rm.scope_metrics_size() == 1);
  const auto& sm = rm.scope_metrics(0);
  CHECK(sm.scope().name() == "tokchron");
  CHECK(sm.scope().version() == TOKCHRON_VERSION_STRING);
  REQUIRE(sm.metrics_size() == static_cast<int>(hs.size()));
  for (std::size_t i = 0; i < hs.size(); ++i) {
    const auto& m = sm.metrics(static_cast<int>(i));
    const auto& e = hs[i].data;
    CAPTURE(hs[i].name);
    CHECK(m.name() == hs[i].name);
    CHECK(m.description() == hs[i].description);
    CHECK(m.unit() == hs[i].unit);
    REQUIRE(m.has_exponential_histogram());
    CHECK(m.exponential_histogram().aggregation_temporality() ==
          opentelemetry::proto::metrics::v1::AGGREGATION_TEMPORALITY_DELTA);
    REQUIRE(m.exponential_histogram().data_points_size() == 1);
    const auto& p = m.exponential_histogram().data_points(0);
    REQUIRE(p.attributes_size() == 1);
    CHECK(p.attributes(0).key() == "case");
    CHECK(p.attributes(0).value().string_value() == hs[i].attributes[0].value);
    CHECK(p.start_time_unix_nano() == 1000);
    CHECK(p.time_unix_nano() == 2000);
    CHECK(p.count() == e.count);
    CHECK(p.has_sum() == (e.count > 0));
    CHECK(p.has_min() == e.min.has_value());
    CHECK(p.has_max() == e.max.has_value());
    if (e.count > 0) {
      CHECK(p.sum() == e.sum);
      CHECK(p.min() == *e.min);
      CHECK(p.max() == *e.max);
    }
    CHECK(p.scale() == e.scale);
    CHECK(p.zero_count() == e.zero_count);
    CHECK(p.zero_threshold() == e.zero_threshold);
    CHECK(p.flags() == 0);
    CHECK(p.has_positive() == !e.positive_counts.empty());
    CHECK(p.has_negative() == !e.negative_counts.empty());
    CHECK(p.positive().offset() == (e.positive_counts.empty() ? 0 : e.positive_offset));
    CHECK(std::vector<std::uint64_t>(p.positive().bucket_counts().begin(),
                                     p.positive().bucket_counts().end()) == e.positive_counts);
    CHECK(p.negative().offset() == (e.negative_counts.empty() ? 0 : e.negative_offset));
    CHECK(std::vector<std::uint64_t>(p.negative().bucket_counts().begin(),
                                     p.negative().bucket_counts().end()) == e.negative_counts);
  }
}

TEST_CASE("OTLP protobuf: the JSON export, read by protobuf's JSON parser, gives the same bytes") {
  const auto hs = known_histograms();
  const label_set resource = {{"service.name", "test"}};
  for (const auto t : {otlp_temporality::cumulative, otlp_temporality::delta}) {
    const std::string json =
        otlp_metrics(hs, resource, 1764979200000000000ULL, 1764979260000000123ULL, t).dump();
    otlp::ExportMetricsServiceRequest from_json;
    const auto status = google::protobuf::util::JsonStringToMessage(json, &from_json);
    REQUIRE_MESSAGE(status.ok(), status.ToString());
    std::string bytes;
    REQUIRE(from_json.SerializeToString(&bytes));
    CHECK(bytes ==
          otlp_metrics_protobuf(hs, resource, 1764979200000000000ULL, 1764979260000000123ULL, t));
  }
}
