// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_EXPORT_PROMQL_HPP
#define TOKCHRON_EXPORT_PROMQL_HPP

/// \file
/// PromQL's `histogram_quantile` algorithm, to state (and test) what a dashboard reads off the
/// classic histograms tokchron exports.

#include <cstddef>
#include <optional>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/exposition/snapshot_data.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// What PromQL's `histogram_quantile(q, ...)` answers (Prometheus 2.x `bucketQuantile`) for
/// cumulative counts `cumulative[i]` at `upper_bounds[i]` (finite, increasing) and `total` in
/// the +Inf bucket; counts may be fractional (rates, sums of rates). The first bucket whose
/// count reaches q * total, linear interpolation inside it from the previous bound (from 0
/// for the first bucket when its bound is > 0); a rank in the +Inf bucket answers the highest
/// finite bound. Empty when total is 0, there are no bounds, or q is outside [0, 1].
[[nodiscard]] inline std::optional<double> promql_histogram_quantile(
    double q, const std::vector<double>& upper_bounds, const std::vector<double>& cumulative,
    double total) noexcept {
  if (!(q >= 0 && q <= 1) || !(total > 0) || upper_bounds.empty() ||
      cumulative.size() != upper_bounds.size())
    return std::nullopt;
  const double rank = q * total;
  double below = 0, start = 0;
  for (std::size_t b = 0; b < upper_bounds.size(); ++b) {
    // Like ensureMonotonic: a count below the previous one counts as the previous one.
    const double c = cumulative[b] < below ? below : cumulative[b];
    if (c >= rank) {
      if (b == 0 && upper_bounds[0] <= 0) return upper_bounds[0];
      return start + (upper_bounds[b] - start) * ((rank - below) / (c - below));
    }
    below = c;
    start = upper_bounds[b];
  }
  return upper_bounds.back();
}

/// `promql_histogram_quantile` of one classic histogram.
[[nodiscard]] inline std::optional<double> promql_histogram_quantile(double q,
                                                                     const histogram_data& h) {
  std::vector<double> bounds, cumulative;
  bounds.reserve(h.buckets.size());
  cumulative.reserve(h.buckets.size());
  for (const auto& b : h.buckets) {
    bounds.push_back(b.upper_bound);
    cumulative.push_back(static_cast<double>(b.cumulative_count));
  }
  return promql_histogram_quantile(q, bounds, cumulative, static_cast<double>(h.count));
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_EXPORT_PROMQL_HPP
