// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_EXPORT_CONVERSIONS_HPP
#define TOKCHRON_EXPORT_CONVERSIONS_HPP

/// \file
/// Snapshot data from estimators: a classic (`le`) histogram of any estimator with `rank(x)`
/// or of a `log_histogram`, and the OpenTelemetry exponential-histogram data of a
/// `log_histogram` (lossless).

#include <cmath>
#include <cstdint>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/exposition/buckets.hpp"
#include "tokchron/exposition/snapshot_data.hpp"
#include "tokchron/quantile/detail/capabilities.hpp"
#include "tokchron/quantile/log_histogram.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// A classic histogram of estimator `e` with the given finite, strictly increasing upper
/// bounds (throws std::invalid_argument otherwise). Needs `e.rank(x)` (samples <= x); with
/// `exact_quantiles` the counts are exact. Complexity: O(b log n) for b bounds.
template <class Estimator>
[[nodiscard]] histogram_data classic_histogram(const Estimator& e,
                                               const std::vector<double>& upper_bounds) {
  static_assert(detail::has_rank<Estimator>::value,
                "classic_histogram needs an estimator with rank(x) (samples <= x)");
  detail::check_upper_bounds(upper_bounds);
  histogram_data h;
  h.count = e.count();
  h.sum = e.sum();
  h.buckets.reserve(upper_bounds.size());
  for (double ub : upper_bounds) {
    using V = typename Estimator::value_type;
    h.buckets.push_back(
        histogram_bucket{ub, static_cast<std::uint64_t>(e.rank(static_cast<V>(ub)))});
  }
  return h;
}

/// A classic histogram of a `log_histogram`. While `h.is_exact()` every count is exact.
/// Otherwise each bucket is counted under the first bound >= its upper edge: counts are exact
/// for bounds on the histogram's bucket edges (`exponential_buckets` at a scale <= h.scale()),
/// and for other bounds (the vLLM presets) the one bucket straddling a bound is counted above
/// it (a value error of at most h.base() - 1 at that bound). O(buckets + bounds).
[[nodiscard]] inline histogram_data classic_histogram(const log_histogram& h,
                                                      const std::vector<double>& upper_bounds) {
  detail::check_upper_bounds(upper_bounds);
  histogram_data out;
  out.count = h.count();
  out.sum = h.sum();
  out.buckets.reserve(upper_bounds.size());
  if (h.is_exact()) {
    for (double ub : upper_bounds) out.buckets.push_back(histogram_bucket{ub, h.rank(ub)});
    return out;
  }
  // Edges computed at two scales may differ in the last bits; buckets are >= 1.7e-4 apart.
  constexpr double tolerance = 1e-9;
  const auto neg = h.negative_buckets();
  const auto pos = h.positive_buckets();
  // Negative buckets count from the most negative (the highest index) up.
  std::vector<log_histogram::bucket> negatives(neg.begin(), neg.end());
  std::size_t ni = negatives.size();
  auto pit = pos.begin();
  std::uint64_t below = 0;
  bool zero_done = false;
  for (double ub : upper_bounds) {
    // Negative bucket i holds [-U_i, -L_i): all <= ub when -L_i <= ub.
    while (ni > 0 && -h.bucket_lower(negatives[ni - 1].index) <= ub + tolerance * std::fabs(ub)) {
      below += negatives[ni - 1].count;
      --ni;
    }
    if (ni == 0 && !zero_done && h.zero_threshold() <= ub + tolerance * std::fabs(ub)) {
      below += h.zero_count();
      zero_done = true;
    }
    if (zero_done) {
      while (pit != pos.end() && h.bucket_upper((*pit).index) <= ub * (1 + tolerance)) {
        below += (*pit).count;
        ++pit;
      }
    }
    out.buckets.push_back(histogram_bucket{ub, below});
  }
  return out;
}

/// The OpenTelemetry exponential-histogram data of `h` (lossless: same scale, zero bucket,
/// offsets and dense counts from the lowest to the highest non-empty bucket). Pass
/// `h.downscaled(s)` to export at a coarser scale (OTel's default limit is 160 buckets).
[[nodiscard]] inline exponential_histogram_data exponential_histogram(const log_histogram& h) {
  exponential_histogram_data e;
  e.scale = h.scale();
  e.count = h.count();
  e.sum = h.sum();
  e.min = h.min();
  e.max = h.max();
  e.zero_count = h.zero_count();
  e.zero_threshold = h.zero_threshold();
  auto dense = [](const log_histogram::bucket_range& r, std::int32_t& offset,
                  std::vector<std::uint64_t>& counts) {
    if (r.empty()) return;
    offset = r.first_index();
    counts.assign(static_cast<std::size_t>(r.last_index() - offset) + 1, 0);
    for (const auto b : r) counts[static_cast<std::size_t>(b.index - offset)] = b.count;
  };
  dense(h.positive_buckets(), e.positive_offset, e.positive_counts);
  dense(h.negative_buckets(), e.negative_offset, e.negative_counts);
  return e;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_EXPORT_CONVERSIONS_HPP
