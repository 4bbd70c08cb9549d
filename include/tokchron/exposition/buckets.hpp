// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_EXPOSITION_BUCKETS_HPP
#define TOKCHRON_EXPOSITION_BUCKETS_HPP

/// \file
/// Classic-histogram bucket boundaries: vLLM's presets, exponential boundaries on
/// `log_histogram`'s bucket edges (mergeable across replicas, with a stated error bound), and
/// `bucket_layout`, the bounds each served metric is exported with.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/metrics/metric_table.hpp"
#include "tokchron/quantile/log_histogram.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// Bucket presets from vLLM's `/metrics` (seconds), for dashboards that already exist.
/// `vllm_ttft_buckets` is `vllm:time_to_first_token_seconds`, `vllm_itl_buckets`
/// `vllm:inter_token_latency_seconds` (and the older time_per_output_token), and
/// `vllm_request_latency_buckets` e2e / queue / prefill / decode / inference time.
[[nodiscard]] inline std::vector<double> vllm_ttft_buckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
}
/// See `vllm_ttft_buckets`.
[[nodiscard]] inline std::vector<double> vllm_itl_buckets() {
  return {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
          0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
}
/// See `vllm_ttft_buckets`.
[[nodiscard]] inline std::vector<double> vllm_request_latency_buckets() {
  return {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
          30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
}

/// The classic-histogram error bound of exponential boundaries at `scale`: every value read off
/// by linear interpolation inside a bucket (PromQL's `histogram_quantile`) lies in the same
/// bucket as the true (nearest-rank) quantile, so its relative error is at most
/// base - 1 = 2^(2^-scale) - 1 (scale 3: 9.05 %, 4: 4.43 %, 5: 2.19 %), for quantiles whose
/// value lies inside the covered range. Throws std::invalid_argument outside [-10, 12].
[[nodiscard]] inline double exponential_buckets_error(int scale) {
  return log_histogram::with_scale(scale).base() - 1.0;
}

/// Classic-histogram upper bounds on the bucket edges of a `log_histogram` at `scale` (in
/// [-10, 12]) covering [lo, hi] (0 < lo < hi): the upper edges of the buckets from the one
/// holding `lo` to the one holding `hi`, preceded by the lower edge of the first (so PromQL's
/// first bucket, which it interpolates from 0, holds nothing below `lo`). The edges are
/// bit-identical to `log_histogram::bucket_upper` at any scale >= `scale`, so such a histogram
/// converts to them without loss, and every replica writes the same `le` labels. Throws
/// std::invalid_argument on a bad range or scale, or when there would be more than
/// `max_buckets` bounds.
[[nodiscard]] inline std::vector<double> exponential_buckets(int scale, double lo, double hi,
                                                             std::size_t max_buckets = 1000) {
  if (!(lo > 0) || !(hi > lo) || !std::isfinite(hi))
    TOKCHRON_THROW(std::invalid_argument,
                   "tokchron: exponential buckets need a finite range 0 < lo < hi");
  const log_histogram layout = log_histogram::with_scale(scale);
  const std::int32_t first = layout.index_of(lo);
  const std::int32_t last = layout.index_of(hi);
  const auto n = static_cast<std::size_t>(last - first) + 2;
  if (n > max_buckets)
    TOKCHRON_THROW(std::invalid_argument,
                   "tokchron: exponential buckets: too many buckets for the range at this scale");
  std::vector<double> b;
  b.reserve(n);
  b.push_back(layout.bucket_lower(first));
  for (std::int32_t i = first; i <= last; ++i) b.push_back(layout.bucket_upper(i));
  return b;
}

namespace detail {
inline void check_upper_bounds(const std::vector<double>& upper_bounds) {
  for (std::size_t i = 0; i < upper_bounds.size(); ++i) {
    if (!std::isfinite(upper_bounds[i]))
      TOKCHRON_THROW(std::invalid_argument,
                     "tokchron: histogram bucket bounds must be finite (+Inf is implicit)");
    if (i > 0 && !(upper_bounds[i] > upper_bounds[i - 1]))
      TOKCHRON_THROW(std::invalid_argument,
                     "tokchron: histogram bucket bounds must be strictly increasing");
  }
}
}  // namespace detail

/// Classic-histogram upper bounds (seconds) per distribution.
struct bucket_layout {
  std::vector<double> ttft, tpot, itl, request;  ///< request: every other served metric

  /// The bounds metric `m` is exported with.
  [[nodiscard]] const std::vector<double>& bounds(metric_id m) const noexcept {
    switch (m) {
      case metric_id::ttft: return ttft;
      case metric_id::tpot: return tpot;
      case metric_id::itl: return itl;
      default: return request;
    }
  }
  /// The same `exponential_buckets(scale, lo, hi)` for every distribution: PromQL's
  /// `histogram_quantile` over any sum of replicas then errs by at most
  /// `exponential_buckets_error(scale)` (4.43 % at the default scale 4) inside [lo, hi].
  /// The default, 1 ms..1000 s at scale 4, is 321 bounds per histogram.
  [[nodiscard]] static bucket_layout exponential(int scale = 4, double lo = 1e-3, double hi = 1e3) {
    std::vector<double> b = exponential_buckets(scale, lo, hi);
    return bucket_layout{b, b, b, b};
  }
  /// vLLM's lists (`vllm_ttft_buckets` etc.; TPOT uses the ITL list, as vLLM does).
  [[nodiscard]] static bucket_layout vllm() {
    return bucket_layout{vllm_ttft_buckets(), vllm_itl_buckets(), vllm_itl_buckets(),
                         vllm_request_latency_buckets()};
  }
};

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_EXPOSITION_BUCKETS_HPP
