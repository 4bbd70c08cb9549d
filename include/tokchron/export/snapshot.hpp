// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_EXPORT_SNAPSHOT_HPP
#define TOKCHRON_EXPORT_SNAPSHOT_HPP

/// \file
/// Plain snapshot data: what every exporter (Prometheus text, prometheus-cpp, OTLP, JSON, CSV)
/// reads. Snapshots are taken from estimators, run summaries and SLA verdicts by the functions
/// here and in the exporters; they are values (copyable, no references into live state), so a
/// snapshot taken under a lock can be written out after the lock is released.
///
/// Units: times in seconds (Prometheus base units), counts as integers. Names follow Prometheus
/// conventions: a family's `name` is its base name (`tokchron_ttft_seconds`,
/// `tokchron_requests`); writers add the `_total`, `_bucket`, `_sum`, `_count` suffixes.

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/metrics/run_summary.hpp"
#include "tokchron/quantile/log_histogram.hpp"
#include "tokchron/sla/evaluator.hpp"
#include "tokchron/sla/objective.hpp"
#include "tokchron/sla/verdict.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// One label: a name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with "__") and any UTF-8 value.
struct label {
  std::string name;
  std::string value;
  friend bool operator==(const label& a, const label& b) {
    return a.name == b.name && a.value == b.value;
  }
};
using label_set = std::vector<label>;

/// What a metric family is, as Prometheus and OpenTelemetry type it.
enum class metric_kind : std::uint8_t {
  counter,    ///< monotonic total; written with the `_total` suffix
  gauge,      ///< a value that goes up and down
  histogram,  ///< cumulative `le` buckets, `_sum` and `_count`
};

/// "counter", "gauge" or "histogram".
[[nodiscard]] constexpr std::string_view to_string(metric_kind k) noexcept {
  switch (k) {
    case metric_kind::counter: return "counter";
    case metric_kind::gauge: return "gauge";
    case metric_kind::histogram: return "histogram";
  }
  return "unknown";
}

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

// --- classic histogram bucket boundaries ---------------------------------------------------

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
// has_rank: sla/evaluator.hpp.

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

// --- run summaries and SLA verdicts ---------------------------------------------------------
// `run_summary` (metrics/run_summary.hpp) and `sla_verdict` (sla/verdict.hpp) are plain data
// already; exporters read them as they are. These add them to a snapshot as gauges.

/// Adds a run summary's scalar fields as gauges named `prefix` + field
/// (`tokchron_run_duration_seconds`,
/// `..._request_throughput`, `..._output_throughput`, `..._total_token_throughput`,
/// `..._completed`, `..._failed`, `..._mean_concurrency`, `..._peak_concurrency`) and each latency
/// distribution's percentiles as `prefix` + metric + `_seconds{percentile="95"}` gauges (an
/// undefined value is left out), every point labelled `profile` plus `labels`.
inline void add_run_summary(metrics_snapshot& s, const run_summary& r, const label_set& labels = {},
                            const std::string& prefix = "tokchron_run_") {
  label_set base = labels;
  base.push_back(label{"profile", r.profile});
  auto gauge = [&](const std::string& name, const char* help, std::optional<double> v) {
    auto& f = s.family(prefix + name, help, metric_kind::gauge);
    if (v) f.add(*v, base);
  };
  gauge("duration_seconds", "Run duration.", r.duration);
  gauge("request_throughput", "Completed requests per second.", r.request_throughput);
  gauge("output_throughput", "Output tokens per second.", r.output_throughput);
  gauge("total_token_throughput", "Prompt and output tokens per second.", r.total_token_throughput);
  gauge("completed", "Requests completed.", static_cast<double>(r.completed));
  gauge("failed", "Requests failed.", static_cast<double>(r.failed));
  gauge("mean_concurrency", "Sum of E2E latencies over the duration.", r.mean_concurrency);
  gauge("peak_concurrency", "Most requests in flight at once.",
        static_cast<double>(r.peak_concurrency));
  const std::pair<const char*, const distribution*> dists[] = {
      {"ttft", &r.ttft},   {"tpot", &r.tpot},       {"itl", &r.itl},      {"e2el", &r.e2el},
      {"queue", &r.queue}, {"prefill", &r.prefill}, {"decode", &r.decode}};
  for (const auto& [metric, d] : dists) {
    if (d->count == 0) continue;
    auto& f = s.family(prefix + metric + "_seconds",
                       "Percentiles of the run's distribution, by the profile's method.",
                       metric_kind::gauge, "seconds");
    for (const auto& p : d->percentiles) {
      if (!p.value) continue;
      label_set l = base;
      l.push_back(label{"percentile", detail::shortest_number(p.percent)});
      f.add(*p.value, std::move(l));
    }
  }
}

/// Adds SLA verdicts as gauges `prefix` + `pass` (1 pass, 0 fail; no point when undecided),
/// `decided`, `measured`, `threshold`, `margin` and `samples`, each point labelled `labels` plus
/// `objective` ("p95(ttft) < 1.5s"). Values in the metric's base unit (seconds, tokens/s).
inline void add_verdicts(metrics_snapshot& s, const sla_verdict& v, const label_set& labels = {},
                         const std::string& prefix = "tokchron_slo_") {
  auto fam = [&](const char* name, const char* help) {
    return metric_family{prefix + name, help, metric_kind::gauge, {}, {}};
  };
  metric_family pass = fam("pass", "1 when the objective passes, 0 when it fails."),
                decided = fam("decided", "1 when the data decide the objective, 0 when not."),
                measured = fam("measured", "The measured statistic."),
                threshold = fam("threshold", "The objective's threshold."),
                margin = fam("margin", "Signed headroom (negative: missed by that much)."),
                samples = fam("samples", "Samples judged.");
  for (const auto& x : v.verdicts) {
    label_set l = labels;
    l.push_back(label{"objective", x.target.to_string()});
    if (x.decided()) pass.add(x.passed() ? 1.0 : 0.0, l);
    decided.add(x.decided() ? 1.0 : 0.0, l);
    if (x.measured) measured.add(*x.measured, l);
    threshold.add(x.target.threshold, l);
    if (x.margin) margin.add(*x.margin, l);
    samples.add(static_cast<double>(x.samples), l);
  }
  for (auto* f : {&pass, &decided, &measured, &threshold, &margin, &samples})
    s.families.push_back(std::move(*f));
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_EXPORT_SNAPSHOT_HPP
