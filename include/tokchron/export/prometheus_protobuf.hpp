// SPDX-License-Identifier: MIT
// tokchron-requires: protobuf
#ifndef TOKCHRON_EXPORT_PROMETHEUS_PROTOBUF_HPP
#define TOKCHRON_EXPORT_PROMETHEUS_PROTOBUF_HPP

/// \file
/// Prometheus' protobuf exposition format, with native histograms: `log_histogram`s exported
/// as native (exponential) histograms, next to the classic buckets of the same families so
/// that a scraper without native-histogram support reads the classic series. An adaptor: the
/// encoder is compiled in the `tokchron::prometheus_protobuf` library (built when CMake finds
/// Debian's libprotobuf-dev and protobuf-compiler), whose messages come from
/// proto/io/prometheus/client/metrics.proto (Prometheus' own package, message names and field
/// numbers). Not included by tokchron.hpp.
///
/// \code
///   #include <tokchron/export/prometheus_protobuf.hpp>
///   tokchron::serving_metrics m(o);  // o.scale = tokchron::prometheus_native_scale_for(0.01)
///   // GET /metrics:
///   if (tokchron::negotiate_exposition(accept) == tokchron::exposition_format::protobuf)
///     reply(tokchron::prometheus_protobuf_content_type,
///           tokchron::to_prometheus_protobuf(m.snapshot(),
///           tokchron::prometheus_native_histograms(m)));
/// \endcode
///
/// **Schema and error bound** (docs/library/exporters.md derives them). A native histogram's
/// schema is a `log_histogram` scale limited to -4..8, so a histogram at scale s <= 8 exports
/// as it is, losslessly: a midpoint-style estimate from the exported buckets keeps
/// log_histogram's bound (base - 1)/(base + 1). A finer histogram is downscaled to schema 8
/// (bound 0.135 %). PromQL's `histogram_quantile` answers by linear interpolation inside the
/// bucket that holds the rank (Prometheus 2.42, promql/quantile.go), which errs by up to
/// base - 1 = `prometheus_native_quantile_error(schema)`, about twice the midpoint bound: to
/// keep a relative accuracy alpha through PromQL, record at `prometheus_native_scale_for(alpha)`.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/export/conversions.hpp"
#include "tokchron/export/prometheus.hpp"
#include "tokchron/export/serving_metrics.hpp"
#include "tokchron/exposition/snapshot_data.hpp"
#include "tokchron/quantile/log_histogram.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// The HTTP Content-Type of `to_prometheus_protobuf` output: varint-length-delimited
/// io.prometheus.client.MetricFamily messages.
inline constexpr std::string_view prometheus_protobuf_content_type =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
    "encoding=delimited";

/// The native-histogram schemas Prometheus accepts.
inline constexpr int prometheus_native_min_schema = -4;
inline constexpr int prometheus_native_max_schema = 8;

/// The largest relative error of any estimate inside a native bucket at `schema` (-4..8;
/// std::invalid_argument otherwise), relative to any value in the same bucket:
/// base - 1 = 2^(2^-schema) - 1. PromQL's `histogram_quantile` on a native histogram
/// interpolates linearly inside the bucket holding the rank, so its answer is within this of
/// the exact quantile (0.271 % at schema 8, 0.543 % at 7, 1.09 % at 6, 4.43 % at 4).
[[nodiscard]] inline double prometheus_native_quantile_error(int schema) {
  if (schema < prometheus_native_min_schema || schema > prometheus_native_max_schema)
    throw std::invalid_argument("prometheus_native_quantile_error: schema " +
                                std::to_string(schema) + " is outside -4..8");
  return std::expm1(std::ldexp(1.0, -schema) * std::log(2.0));
}

/// The coarsest scale (-4..8) whose native buckets keep PromQL's `histogram_quantile` within
/// `relative_accuracy` (`prometheus_native_quantile_error(scale) <= relative_accuracy`): record
/// the histograms at this scale. 1 % gives 7 (0.543 %), where `log_histogram(0.01)` alone
/// would pick 6 (its midpoint answer within 0.54 %, PromQL's within 1.09 %). Throws
/// std::invalid_argument for alpha below schema 8's 0.271 % (no Prometheus schema is fine
/// enough) or not below 1.
[[nodiscard]] inline int prometheus_native_scale_for(double relative_accuracy) {
  if (!(relative_accuracy >= prometheus_native_quantile_error(prometheus_native_max_schema)) ||
      !(relative_accuracy < 1))
    throw std::invalid_argument(
        "prometheus_native_scale_for: the accuracy must lie in [0.00271, 1) (schema 8's bucket "
        "width is the finest a native histogram has)");
  for (int s = prometheus_native_min_schema; s < prometheus_native_max_schema; ++s)
    if (prometheus_native_quantile_error(s) <= relative_accuracy) return s;
  return prometheus_native_max_schema;
}

/// The native-histogram data of `h`: `exponential_histogram(h)` when h's scale is within
/// -4..8 (lossless), otherwise of `h.downscaled(8)` (each 2^(scale - 8) buckets become one; no
/// sample is lost, the midpoint bound becomes schema 8's 0.135 %). A histogram coarser than
/// schema -4 cannot be split without inventing counts: std::invalid_argument.
[[nodiscard]] inline exponential_histogram_data prometheus_native_data(const log_histogram& h) {
  if (h.scale() < prometheus_native_min_schema)
    throw std::invalid_argument("prometheus_native_data: scale " + std::to_string(h.scale()) +
                                " is coarser than Prometheus' coarsest schema -4");
  if (h.scale() > prometheus_native_max_schema)
    return exponential_histogram(h.downscaled(prometheus_native_max_schema));
  return exponential_histogram(h);
}

/// The native-histogram data of a classic histogram of non-negative values (latencies) whose
/// bounds are consecutive edges base^i of one native schema (as
/// `bucket_layout::exponential(scale, lo, hi)` writes them): the buckets between two bounds are
/// that schema's buckets, and everything <= the first bound goes to the zero bucket
/// (zero_threshold = the first bound; classic buckets cannot tell a negative value from a small
/// one, so a histogram that may hold values below -first bound must not be converted). Empty when
/// the bounds are not such edges (vLLM's lists), there are fewer than two, or some sample lies
/// above the last bound (no native bucket can hold it without inventing its place). PromQL's answer
/// from it errs no more and no less than from the classic buckets (same edges); the series is one
/// instead of one per bound.
[[nodiscard]] inline std::optional<exponential_histogram_data> prometheus_native_from_classic(
    const histogram_data& c) {
  const auto& b = c.buckets;
  if (b.size() < 2 || !(b[0].upper_bound > 0) || c.buckets.back().cumulative_count != c.count)
    return std::nullopt;
  const double ratio_log2 = std::log2(b[1].upper_bound / b[0].upper_bound);
  if (!(ratio_log2 > 0)) return std::nullopt;
  const double schema_f = -std::log2(ratio_log2);
  const int schema = static_cast<int>(std::lround(schema_f));
  if (std::fabs(schema_f - schema) > 1e-6 || schema < prometheus_native_min_schema ||
      schema > prometheus_native_max_schema)
    return std::nullopt;
  const auto layout = log_histogram::with_scale(schema);
  // b[0] is the inclusive upper edge of bucket `first - 1`.
  const std::int32_t first = layout.index_of(b[0].upper_bound) + 1;
  for (std::size_t k = 0; k < b.size(); ++k)
    if (layout.bucket_lower(first + static_cast<std::int32_t>(k)) != b[k].upper_bound)
      return std::nullopt;
  exponential_histogram_data e;
  e.scale = schema;
  e.count = c.count;
  e.sum = c.sum;
  e.zero_threshold = b[0].upper_bound;
  e.zero_count = b[0].cumulative_count;
  e.positive_offset = first;
  e.positive_counts.reserve(b.size() - 1);
  for (std::size_t k = 1; k < b.size(); ++k)
    e.positive_counts.push_back(b[k].cumulative_count - b[k - 1].cumulative_count);
  return e;
}

/// What PromQL's `histogram_quantile(q, ...)` answers for a native histogram (Prometheus 2.42,
/// promql/quantile.go `histogramQuantile`): the buckets in ascending order (negative ones,
/// the zero bucket, positive ones), the first whose cumulative count reaches q * total, and
/// linear interpolation between its edges (the zero bucket spans [-zero_threshold,
/// zero_threshold], from 0 when there are no negative buckets, to 0 when there are no
/// positive ones). Counts may be fractional (rates, sums of rates); the sides are dense, in
/// OpenTelemetry numbering (`exponential_histogram_data`'s). Empty when q is outside (0, 1]
/// or the total is 0.
[[nodiscard]] inline std::optional<double> promql_native_histogram_quantile(
    double q, int schema, double zero_threshold, double zero_count, std::int32_t positive_offset,
    const std::vector<double>& positive, std::int32_t negative_offset,
    const std::vector<double>& negative) {
  double total = zero_count;
  for (const double c : positive) total += c;
  for (const double c : negative) total += c;
  if (!(q > 0 && q <= 1) || !(total > 0)) return std::nullopt;
  const auto layout = log_histogram::with_scale(schema);
  const double rank = q * total;
  double cumulative = 0, lower = 0, upper = 0, count = 0;
  bool found = false;
  auto visit = [&](double lo, double up, double c) {
    if (found) return;
    lower = lo;
    upper = up;
    count = c;
    cumulative += c;
    found = cumulative >= rank;
  };
  for (std::size_t k = negative.size(); k-- > 0;) {
    const auto i = negative_offset + static_cast<std::int32_t>(k);
    visit(-layout.bucket_upper(i), -layout.bucket_lower(i), negative[k]);
  }
  visit(negative.empty() && !positive.empty() ? 0 : -zero_threshold,
        positive.empty() && !negative.empty() ? 0 : zero_threshold, zero_count);
  for (std::size_t k = 0; k < positive.size(); ++k) {
    const auto i = positive_offset + static_cast<std::int32_t>(k);
    visit(layout.bucket_lower(i), layout.bucket_upper(i), positive[k]);
  }
  if (!found) return upper;
  return lower + (upper - lower) * ((rank - (cumulative - count)) / count);
}

/// `promql_native_histogram_quantile` of one native histogram.
[[nodiscard]] inline std::optional<double> promql_native_histogram_quantile(
    double q, const exponential_histogram_data& e) {
  auto as_double = [](const std::vector<std::uint64_t>& v) {
    return std::vector<double>(v.begin(), v.end());
  };
  return promql_native_histogram_quantile(
      q, e.scale, e.zero_threshold, static_cast<double>(e.zero_count), e.positive_offset,
      as_double(e.positive_counts), e.negative_offset, as_double(e.negative_counts));
}

/// A native histogram for one point of a classic histogram family: the family's name and the
/// point's labels (without constant labels) say which.
struct native_histogram_point {
  std::string family;
  label_set labels;
  exponential_histogram_data data;
};

/// The native histograms of `m`'s served metrics (`prometheus_native_data` of each), one per
/// histogram family of `m.snapshot()`, with the same names and labels.
[[nodiscard]] inline std::vector<native_histogram_point> prometheus_native_histograms(
    const serving_metrics& m) {
  std::vector<native_histogram_point> out;
  for (const auto& d : metric_table)
    if (d.served)
      out.push_back(native_histogram_point{m.options().names[d.id], m.options().labels,
                                           prometheus_native_data(m.histogram(d.id))});
  return out;
}

/// The native histograms of every histogram point of `s` whose classic bounds are a native
/// schema's edges (`prometheus_native_from_classic`); others stay classic only.
[[nodiscard]] inline std::vector<native_histogram_point> prometheus_native_from_classic(
    const metrics_snapshot& s) {
  std::vector<native_histogram_point> out;
  for (const auto& f : s.families) {
    if (f.kind != metric_kind::histogram) continue;
    for (const auto& p : f.points)
      if (auto e = prometheus_native_from_classic(p.histogram))
        out.push_back(native_histogram_point{f.name, p.labels, std::move(*e)});
  }
  return out;
}

/// The protobuf exposition of `s`: one varint-length-delimited MetricFamily per family, in
/// order. Counters are named with `_total` unless the family's `total_suffix` is false (the
/// series name the text format writes: TGI's counters have none), gauges and histograms as
/// they are; histograms carry their classic buckets (+Inf included) and,
/// where `native` has a point of the same family and labels, its native histogram (schema,
/// zero bucket, spans and deltas; Prometheus numbers a bucket by its upper edge, so each index
/// is the OpenTelemetry one plus 1). A zero threshold of 0 is written as 2^-128
/// (client_golang's default) unless a bucket lies below that: Prometheus 2.42 reads an empty
/// histogram as native only with a threshold above 0, and the zero bucket then still holds
/// exactly the zeros. `o.const_labels` go first on every point;
/// `o.openmetrics` is ignored. Validates like `write_prometheus` (names, labels, buckets) and
/// also refuses a native point without its classic point, one whose count differs from the
/// classic one or whose buckets do not add up to it, a schema outside -4..8 or a count above
/// 2^63 - 1 (std::invalid_argument naming the family; nothing is returned then).
/// Compiled in tokchron::prometheus_protobuf.
[[nodiscard]] std::string to_prometheus_protobuf(
    const metrics_snapshot& s, const std::vector<native_histogram_point>& native = {},
    const prometheus_options& o = {});

/// The exposition formats a `/metrics` endpoint offers.
enum class exposition_format : std::uint8_t {
  text,         ///< text format 0.0.4 (`prometheus_content_type`)
  openmetrics,  ///< OpenMetrics 1.0 (`openmetrics_content_type`)
  protobuf,     ///< `prometheus_protobuf_content_type`
};

/// The format to answer a scrape with, from its `Accept` header (RFC 9110 content negotiation):
/// the offered media range with the highest q-value, the earlier one on a tie; protobuf only
/// for `application/vnd.google.protobuf` with `proto=io.prometheus.client.MetricFamily` and
/// `encoding=delimited`; `text/plain`, `text/*` and `*/*` mean text. Without an acceptable
/// offer (no header, q=0 everywhere, unknown types), text: a scraper always reads it.
/// Prometheus 2.42 with `--enable-feature=native-histograms` puts protobuf first, without it
/// OpenMetrics first.
[[nodiscard]] inline exposition_format negotiate_exposition(std::string_view accept) noexcept {
  auto trim = [](std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    return v;
  };
  auto iequal = [](std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const char x = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
      const char y = b[i] >= 'A' && b[i] <= 'Z' ? static_cast<char>(b[i] - 'A' + 'a') : b[i];
      if (x != y) return false;
    }
    return true;
  };
  exposition_format best = exposition_format::text;
  double best_q = 0;
  while (!accept.empty()) {
    const auto comma = accept.find(',');
    std::string_view range = accept.substr(0, comma);
    accept = comma == std::string_view::npos ? std::string_view() : accept.substr(comma + 1);
    const auto semi = range.find(';');
    const std::string_view type = trim(range.substr(0, semi));
    std::string_view params =
        semi == std::string_view::npos ? std::string_view() : range.substr(semi + 1);
    double q = 1;
    std::string_view proto, encoding;
    while (!params.empty()) {
      const auto next = params.find(';');
      const std::string_view p = trim(params.substr(0, next));
      params = next == std::string_view::npos ? std::string_view() : params.substr(next + 1);
      const auto eq = p.find('=');
      if (eq == std::string_view::npos) continue;
      const std::string_view key = trim(p.substr(0, eq));
      std::string_view value = trim(p.substr(eq + 1));
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
        value = value.substr(1, value.size() - 2);
      if (iequal(key, "q")) {
        // RFC 9110: 0, 0.d{0,3}, 1, 1.0{0,3}; anything else makes the range unacceptable.
        double v = -1;
        if (!value.empty() && (value[0] == '0' || value[0] == '1') &&
            (value.size() == 1 || (value[1] == '.' && value.size() <= 5))) {
          v = value[0] - '0';
          double scale = 0.1;
          for (std::size_t i = 2; i < value.size(); ++i, scale /= 10) {
            if (value[i] < '0' || value[i] > '9') v = -1;
            if (v < 0) break;
            v += (value[i] - '0') * scale;
          }
          if (v > 1) v = -1;
        }
        q = v;
      } else if (iequal(key, "proto")) {
        proto = value;
      } else if (iequal(key, "encoding")) {
        encoding = value;
      }
    }
    std::optional<exposition_format> f;
    if (iequal(type, "application/vnd.google.protobuf")) {
      if (proto == "io.prometheus.client.MetricFamily" && iequal(encoding, "delimited"))
        f = exposition_format::protobuf;
    } else if (iequal(type, "application/openmetrics-text")) {
      f = exposition_format::openmetrics;
    } else if (iequal(type, "text/plain") || iequal(type, "text/*") || iequal(type, "*/*")) {
      f = exposition_format::text;
    }
    if (f && q > best_q) {
      best = *f;
      best_q = q;
    }
  }
  return best;
}

/// The Content-Type of `f`.
[[nodiscard]] constexpr std::string_view content_type(exposition_format f) noexcept {
  switch (f) {
    case exposition_format::text: return prometheus_content_type;
    case exposition_format::openmetrics: return openmetrics_content_type;
    case exposition_format::protobuf: return prometheus_protobuf_content_type;
  }
  return prometheus_content_type;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_EXPORT_PROMETHEUS_PROTOBUF_HPP
