// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_EXPOSITION_SNAPSHOT_DATA_HPP
#define TOKCHRON_EXPOSITION_SNAPSHOT_DATA_HPP

/// \file
/// Plain snapshot data: what every exporter (Prometheus text, prometheus-cpp, OTLP, JSON, CSV)
/// reads. Snapshots are values (copyable, no references into live state), so a snapshot taken
/// under a lock can be written out after the lock is released. Standard library only.
///
/// Units: times in seconds (Prometheus base units), counts as integers. Names follow Prometheus
/// conventions: a family's `name` is its base name (`tokchron_ttft_seconds`,
/// `tokchron_requests`); writers add the `_total`, `_bucket`, `_sum`, `_count` suffixes.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/exposition/labels.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// One cumulative bucket of a classic histogram: samples <= `upper_bound`.
struct histogram_bucket {
  double upper_bound = 0;
  std::uint64_t cumulative_count = 0;
};

/// A classic (Prometheus `le`) histogram: finite upper bounds, strictly increasing, with
/// non-decreasing cumulative counts; the `+Inf` bucket is implicit and equals `count`.
struct histogram_data {
  std::vector<histogram_bucket> buckets;
  std::uint64_t count = 0;
  double sum = 0;
};

/// An OpenTelemetry exponential histogram (also Prometheus' native-histogram layout): bucket
/// `offset + i` of a side holds values in (base^(offset+i), base^(offset+i+1)] with
/// base = 2^(2^-scale); `zero_count` holds values with |x| <= `zero_threshold`.
struct exponential_histogram_data {
  int scale = 0;
  std::uint64_t count = 0;
  double sum = 0;
  std::optional<double> min, max;
  std::uint64_t zero_count = 0;
  double zero_threshold = 0;
  std::int32_t positive_offset = 0;
  std::vector<std::uint64_t> positive_counts;
  std::int32_t negative_offset = 0;
  std::vector<std::uint64_t> negative_counts;
};

/// One series of a family: its labels and its value (counter, gauge) or histogram.
struct metric_point {
  label_set labels;
  double value = 0;
  histogram_data histogram;
};

/// A metric family: one name, help and kind, one point per label set.
struct metric_family {
  std::string name;  ///< base name, without `_total` (counters) or `_bucket` (histograms)
  std::string help;
  metric_kind kind = metric_kind::gauge;
  std::string unit;  ///< OpenMetrics unit ("seconds"); the name must then end in "_" + unit
  std::vector<metric_point> points;
  /// Prometheus text 0.0.4 only: false writes a counter's samples without the `_total` suffix,
  /// as exporters that never add it do (TGI's metrics-exporter-prometheus). OpenMetrics
  /// requires the suffix and always writes it.
  bool total_suffix = true;

  /// Adds a counter or gauge point.
  metric_family& add(double v, label_set labels = {}) {
    points.push_back(metric_point{std::move(labels), v, {}});
    return *this;
  }
  /// Adds a histogram point.
  metric_family& add(histogram_data h, label_set labels = {}) {
    points.push_back(metric_point{std::move(labels), 0, std::move(h)});
    return *this;
  }
};

/// Everything one exposition holds.
struct metrics_snapshot {
  std::vector<metric_family> families;

  /// Appends a family and returns it (for `.add(...)` chains). References stay valid until the
  /// next `family` call.
  metric_family& family(std::string name, std::string help, metric_kind kind,
                        std::string unit = {}) {
    families.push_back(metric_family{std::move(name), std::move(help), kind, std::move(unit), {}});
    return families.back();
  }
};

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_EXPOSITION_SNAPSHOT_DATA_HPP
