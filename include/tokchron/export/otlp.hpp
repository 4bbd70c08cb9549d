// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#ifndef TOKCHRON_EXPORT_OTLP_HPP
#define TOKCHRON_EXPORT_OTLP_HPP

/// \file
/// OTLP JSON (OpenTelemetry protocol, JSON encoding) of `log_histogram`s as ExponentialHistogram
/// data points, and of OpenTelemetry's GenAI server metrics (`otlp_genai_histograms`, from a
/// scrape of `otel_live_options`) as explicit-bucket Histogram data points, for an OTLP/HTTP
/// collector (`POST /v1/metrics`, Content-Type application/json).
/// An adaptor: needs nlohmann-json (Debian nlohmann-json3-dev).
///
/// Encoding (opentelemetry-proto `metrics.proto`, OTLP/JSON rules): lowerCamelCase field names;
/// 64-bit integers (`count`, `zeroCount`, `bucketCounts`, `timeUnixNano`) as decimal strings;
/// `scale` and bucket `offset` (sint32) as numbers; `aggregationTemporality` as its integer
/// (1 delta, 2 cumulative); `sum`, `min`, `max`, `zeroThreshold` as numbers (omitted when there
/// are no samples); an empty side of buckets is omitted. The mapping is lossless: scale, zero
/// bucket, offsets and counts are the histogram's own (see `exponential_histogram`).

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokchron/config.hpp"
#include "tokchron/export/conversions.hpp"
#include "tokchron/export/serving_metrics.hpp"
#include "tokchron/exposition/snapshot_data.hpp"
#include "tokchron/live/presets.hpp"
#include "tokchron/metrics/metric_table.hpp"
#include "tokchron/quantile/log_histogram.hpp"
#include "tokchron/version.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// OTLP's AggregationTemporality.
enum class otlp_temporality : std::uint8_t { delta = 1, cumulative = 2 };

namespace detail {
/// The fields every histogram data point begins with, in OTLP/JSON's order: attributes (left
/// out when none), start and time, count, and the sum when anything was counted.
[[nodiscard]] inline nlohmann::ordered_json otlp_point_head(
    const label_set& attributes, std::uint64_t start_ns, std::uint64_t time_ns, std::uint64_t count,
    double sum, const std::vector<std::pair<std::string, std::int64_t>>& int_attributes = {}) {
  using nlohmann::ordered_json;
  ordered_json p;
  ordered_json attrs = ordered_json::array();
  for (const auto& a : attributes)
    attrs.push_back({{"key", a.name}, {"value", {{"stringValue", a.value}}}});
  for (const auto& [key, value] : int_attributes)  // int64 as a decimal string (OTLP/JSON)
    attrs.push_back({{"key", key}, {"value", {{"intValue", std::to_string(value)}}}});
  if (!attrs.empty()) p["attributes"] = std::move(attrs);
  p["startTimeUnixNano"] = std::to_string(start_ns);
  p["timeUnixNano"] = std::to_string(time_ns);
  p["count"] = std::to_string(count);
  if (count > 0) p["sum"] = sum;
  return p;
}
}  // namespace detail

/// One ExponentialHistogramDataPoint. `start_ns` / `time_ns`: Unix epoch nanoseconds of the
/// interval's start and of the snapshot.
[[nodiscard]] inline nlohmann::ordered_json otlp_data_point(const exponential_histogram_data& e,
                                                            const label_set& attributes,
                                                            std::uint64_t start_ns,
                                                            std::uint64_t time_ns) {
  using nlohmann::ordered_json;
  ordered_json p = detail::otlp_point_head(attributes, start_ns, time_ns, e.count, e.sum);
  p["scale"] = e.scale;
  p["zeroCount"] = std::to_string(e.zero_count);
  auto side = [](std::int32_t offset, const std::vector<std::uint64_t>& counts) {
    ordered_json b;
    b["offset"] = offset;
    ordered_json c = ordered_json::array();
    for (const auto n : counts) c.push_back(std::to_string(n));
    b["bucketCounts"] = std::move(c);
    return b;
  };
  if (!e.positive_counts.empty()) p["positive"] = side(e.positive_offset, e.positive_counts);
  if (!e.negative_counts.empty()) p["negative"] = side(e.negative_offset, e.negative_counts);
  if (e.min) p["min"] = *e.min;
  if (e.max) p["max"] = *e.max;
  p["zeroThreshold"] = e.zero_threshold;
  return p;
}

/// One named histogram for `otlp_metrics`.
struct otlp_histogram {
  std::string name;  ///< OTel semantic-convention style, e.g. "tokchron.ttft"
  std::string description;
  std::string unit = "s";
  exponential_histogram_data data;
  label_set attributes;
};

/// The OTLP (UCUM) unit of a metric: "s", "{token}/s" or "1".
[[nodiscard]] constexpr std::string_view otlp_unit(metric_unit u) noexcept {
  return spelling(u).ucum;
}

/// One `otlp_histogram` per served metric of `m`, in metric_table order: named "tokchron." +
/// the metric's name ("tokchron.e2e", "tokchron.queue_time"), described by its help text, with
/// its unit, at the histogram's own scale (lossless), each point carrying `attributes`.
[[nodiscard]] inline std::vector<otlp_histogram> otlp_histograms(const serving_metrics& m,
                                                                 const label_set& attributes = {}) {
  std::vector<otlp_histogram> out;
  out.reserve(serving_metric_count);
  for (const auto& d : metric_table) {
    if (!d.served) continue;
    otlp_histogram h;
    h.name = "tokchron." + std::string(d.name);
    h.description = std::string(d.help);
    h.unit = std::string(otlp_unit(d.unit));
    h.data = exponential_histogram(m.histogram(d.id));
    h.attributes = attributes;
    out.push_back(std::move(h));
  }
  return out;
}

/// One explicit-bucket Histogram metric with one data point (OpenTelemetry's histogram with
/// `ExplicitBucketBoundaries`, as the GenAI conventions recommend them).
struct otlp_explicit_histogram {
  std::string name;  ///< e.g. "gen_ai.server.time_to_first_token"
  std::string description;
  std::string unit = "s";
  std::vector<double> bounds;         ///< explicitBounds, strictly increasing
  std::vector<std::uint64_t> counts;  ///< bucketCounts, not cumulative: bounds.size() + 1
  std::uint64_t count = 0;
  double sum = 0;
  label_set attributes;
  /// Attributes of type int (`server.port`), after `attributes`.
  std::vector<std::pair<std::string, std::int64_t>> int_attributes;
};

/// True if `a` and `b` are points of one metric (name, description and unit): consecutive
/// entries of one metric are written as one Metric with a data point each (its attribute sets).
[[nodiscard]] inline bool otlp_same_metric(const otlp_explicit_histogram& a,
                                           const otlp_explicit_histogram& b) noexcept {
  return a.name == b.name && a.description == b.description && a.unit == b.unit;
}

/// An OTLP attribute name for a Prometheus label name of the GenAI preset
/// (`otel_live_options`): `gen_ai_operation_name` -> `gen_ai.operation.name`, ...; any other
/// label keeps its name.
[[nodiscard]] inline std::string otlp_genai_attribute(std::string_view label) {
  for (const auto& a : otel_genai_attributes)
    if (a.prometheus == label) return std::string(a.otel);
  return std::string(label);
}

/// The GenAI metrics of a scrape of a `live_metrics` built on `otel_live_options`
/// (live/presets.hpp): one `otlp_explicit_histogram` per series of each of
/// `otel_genai_server_metrics`' families present, under the conventions' name, unit and
/// description, its labels as the conventions' attributes, its buckets the family's.
[[nodiscard]] inline std::vector<otlp_explicit_histogram> otlp_genai_histograms(
    const metrics_snapshot& s) {
  std::vector<otlp_explicit_histogram> out;
  for (const auto& m : otel_genai_server_metrics)
    for (const auto& f : s.families) {
      if (f.name != m.prometheus || f.kind != metric_kind::histogram) continue;
      for (const auto& p : f.points) {
        otlp_explicit_histogram h;
        h.name = std::string(m.otel);
        h.description = std::string(m.description);
        h.unit = std::string(m.unit);
        std::uint64_t below = 0;
        for (const auto& b : p.histogram.buckets) {
          h.bounds.push_back(b.upper_bound);
          h.counts.push_back(b.cumulative_count - below);
          below = b.cumulative_count;
        }
        h.counts.push_back(p.histogram.count - below);
        h.count = p.histogram.count;
        h.sum = p.histogram.sum;
        for (const auto& l : p.labels)
          h.attributes.push_back({otlp_genai_attribute(l.name), l.value});
        out.push_back(std::move(h));
      }
    }
  return out;
}

/// One HistogramDataPoint of `h`.
[[nodiscard]] inline nlohmann::ordered_json otlp_explicit_data_point(
    const otlp_explicit_histogram& h, std::uint64_t start_ns, std::uint64_t time_ns) {
  using nlohmann::ordered_json;
  ordered_json p =
      detail::otlp_point_head(h.attributes, start_ns, time_ns, h.count, h.sum, h.int_attributes);
  ordered_json counts = ordered_json::array();
  for (const auto c : h.counts) counts.push_back(std::to_string(c));
  p["bucketCounts"] = std::move(counts);
  p["explicitBounds"] = h.bounds;
  return p;
}

/// A whole ExportMetricsServiceRequest: one resource (attributes `resource`, e.g.
/// {"service.name", "my-server"}), one scope ("tokchron", its version), one ExponentialHistogram
/// metric with one data point per entry of `histograms`, then one Histogram metric per run of
/// consecutive entries of `explicit_histograms` that are one metric (`otlp_same_metric`), a
/// data point per entry.
[[nodiscard]] inline nlohmann::ordered_json otlp_metrics(
    const std::vector<otlp_histogram>& histograms,
    const std::vector<otlp_explicit_histogram>& explicit_histograms, const label_set& resource,
    std::uint64_t start_ns, std::uint64_t time_ns,
    otlp_temporality temporality = otlp_temporality::cumulative) {
  using nlohmann::ordered_json;
  ordered_json metrics = ordered_json::array();
  for (const auto& h : histograms) {
    ordered_json m;
    m["name"] = h.name;
    m["description"] = h.description;
    m["unit"] = h.unit;
    m["exponentialHistogram"] = {
        {"dataPoints",
         ordered_json::array({otlp_data_point(h.data, h.attributes, start_ns, time_ns)})},
        {"aggregationTemporality", static_cast<int>(temporality)}};
    metrics.push_back(std::move(m));
  }
  for (std::size_t i = 0; i < explicit_histograms.size(); ++i) {
    const otlp_explicit_histogram& h = explicit_histograms[i];
    if (i > 0 && otlp_same_metric(explicit_histograms[i - 1], h)) {
      metrics.back()["histogram"]["dataPoints"].push_back(
          otlp_explicit_data_point(h, start_ns, time_ns));
      continue;
    }
    ordered_json m;
    m["name"] = h.name;
    m["description"] = h.description;
    m["unit"] = h.unit;
    m["histogram"] = {
        {"dataPoints", ordered_json::array({otlp_explicit_data_point(h, start_ns, time_ns)})},
        {"aggregationTemporality", static_cast<int>(temporality)}};
    metrics.push_back(std::move(m));
  }
  ordered_json res_attrs = ordered_json::array();
  for (const auto& a : resource)
    res_attrs.push_back({{"key", a.name}, {"value", {{"stringValue", a.value}}}});
  ordered_json scope = {{"scope", {{"name", "tokchron"}, {"version", TOKCHRON_VERSION_STRING}}},
                        {"metrics", std::move(metrics)}};
  return {{"resourceMetrics",
           ordered_json::array({{{"resource", {{"attributes", std::move(res_attrs)}}},
                                 {"scopeMetrics", ordered_json::array({std::move(scope)})}}})}};
}

/// `otlp_metrics` of exponential histograms only.
[[nodiscard]] inline nlohmann::ordered_json otlp_metrics(
    const std::vector<otlp_histogram>& histograms, const label_set& resource,
    std::uint64_t start_ns, std::uint64_t time_ns,
    otlp_temporality temporality = otlp_temporality::cumulative) {
  return otlp_metrics(histograms, {}, resource, start_ns, time_ns, temporality);
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_EXPORT_OTLP_HPP
