// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_SLA_EVALUATOR_HPP
#define TOKCHRON_SLA_EVALUATOR_HPP

/// \file
/// Judging objectives on distributions, generic over the estimator contract
/// (quantile/estimator.hpp): pass, fail or insufficient data, with distribution-free confidence
/// bounds for percentiles and an MLPerf-style early-stopping estimate.
///
/// **Percentiles.** For the q-quantile xi of the population and n samples, the k-th smallest
/// sample x_(k) satisfies P(x_(k) > xi) = P(B <= k - 1) and P(x_(k) < xi) <= P(B >= k) with
/// B ~ Binomial(n, q), whatever the distribution. The lower bound is x_(l) for the largest l with
/// P(B <= l - 1) <= 1 - c, the upper bound x_(u) for the smallest u with P(B >= u) <= 1 - c
/// (c = `confidence`); when no such rank exists that side is unbounded. So "P99 from 100
/// requests" has no upper bound at c = 0.95 (0.99^100 = 0.37 > 0.05) and cannot pass: at least
/// 299 samples are needed even if none misses. With m samples missing the threshold, a `<`
/// objective passes exactly when P(Binomial(n, 1 - q) <= m) <= 1 - c, which is MLPerf loadgen's
/// early-stopping criterion; `verdict::more_samples_*` solve it for n. An estimator with relative
/// error e (`relative_error()`) widens the bounds to x/(1 + e) and x/(1 - e); one with no bound
/// (e >= 1, e.g. P²) never decides a percentile.
///
/// **Mean.** Judged on a normal (CLT) interval mean +- z_c s / sqrt(n) when the estimator offers
/// `stddev(ddof)` (exact_quantiles does) and n >= 2; otherwise on the observed mean alone (the
/// verdict's reason says so). **Max/min** are the observed extremes, exact by contract.
///
/// Binomial tails use Loader's saddle-point pmf and sum away from the mode, so they are accurate
/// to about 1e-12 relative and cost O(sqrt(n q (1 - q))) at most per tail; a bound costs
/// O(log n) tails. Thread safety: evaluation only reads the estimator (but exact_quantiles sorts
/// on its first query, so it is not safe against a concurrent writer).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <type_traits>

#include "tokchron/collect/distributions.hpp"
#include "tokchron/config.hpp"
#include "tokchron/metrics/builtin_profiles.hpp"
#include "tokchron/metrics/canonical.hpp"
#include "tokchron/metrics/fluidity.hpp"
#include "tokchron/metrics/metric_table.hpp"
#include "tokchron/quantile/detail/capabilities.hpp"
#include "tokchron/quantile/estimator.hpp"
#include "tokchron/quantile/exact.hpp"
#include "tokchron/sla/objective.hpp"
#include "tokchron/sla/verdict.hpp"

TOKCHRON_BEGIN_NAMESPACE

namespace detail {
inline constexpr double two_pi = 6.283185307179586476925286766559;

/// Stirling's error log(n!) - log(sqrt(2 pi n) (n/e)^n) for n >= 1 (Loader 2000).
[[nodiscard]] inline double stirling_error(double n) noexcept {
  if (n <= 15) {
    double lf = 0;
    for (double i = 2; i <= n; i += 1) lf += std::log(i);
    return lf - ((n + 0.5) * std::log(n) - n + 0.5 * std::log(two_pi));
  }
  constexpr double s0 = 1.0 / 12, s1 = 1.0 / 360, s2 = 1.0 / 1260, s3 = 1.0 / 1680, s4 = 1.0 / 1188;
  const double nn = n * n;
  return (s0 - (s1 - (s2 - (s3 - s4 / nn) / nn) / nn) / nn) / n;
}

/// The deviance term x log(x / m) + m - x, accurate when x is close to m (Loader 2000).
[[nodiscard]] inline double binomial_deviance(double x, double m) noexcept {
  if (std::fabs(x - m) < 0.1 * (x + m)) {
    double v = (x - m) / (x + m);
    double s = (x - m) * v;
    double ej = 2 * x * v;
    const double v2 = v * v;
    for (int j = 1; j < 1000; ++j) {
      ej *= v2;
      const double s1 = s + ej / (2 * j + 1);
      if (s1 == s) return s1;
      s = s1;
    }
    return s;
  }
  return x * std::log(x / m) + m - x;
}

/// log P(B = x) for B ~ Binomial(n, p), 0 <= x <= n, 0 < p < 1.
[[nodiscard]] inline double binomial_log_pmf(std::uint64_t n, double p, std::uint64_t x) noexcept {
  const double dn = static_cast<double>(n), dx = static_cast<double>(x);
  if (x == 0) return dn * std::log1p(-p);
  if (x == n) return dn * std::log(p);
  const double lc = stirling_error(dn) - stirling_error(dx) - stirling_error(dn - dx) -
                    binomial_deviance(dx, dn * p) - binomial_deviance(dn - dx, dn * (1 - p));
  const double lf = std::log(two_pi) + std::log(dx) + std::log1p(-dx / dn);
  return lc - 0.5 * lf;
}

/// A mode of Binomial(n, p): floor((n + 1) p), at most n.
[[nodiscard]] inline std::uint64_t binomial_mode(std::uint64_t n, double p) noexcept {
  const double m = std::floor((static_cast<double>(n) + 1) * p);
  return m >= static_cast<double>(n) ? n : static_cast<std::uint64_t>(m);
}

/// sum_{i <= k} P(B = i), summed downwards; accurate for k <= mode.
[[nodiscard]] inline double binomial_sum_below(std::uint64_t n, double p,
                                               std::uint64_t k) noexcept {
  double term = std::exp(binomial_log_pmf(n, p, k));
  double sum = 0;
  const double f = (1 - p) / p;
  for (std::uint64_t i = k;; --i) {
    sum += term;
    if (i == 0) break;
    term *= static_cast<double>(i) / static_cast<double>(n - i + 1) * f;
    if (term <= sum * 1e-17) break;
  }
  return sum;
}

/// sum_{i >= k} P(B = i), summed upwards; accurate for k >= mode.
[[nodiscard]] inline double binomial_sum_above(std::uint64_t n, double p,
                                               std::uint64_t k) noexcept {
  double term = std::exp(binomial_log_pmf(n, p, k));
  double sum = 0;
  const double f = p / (1 - p);
  for (std::uint64_t i = k;; ++i) {
    sum += term;
    if (i == n) break;
    term *= static_cast<double>(n - i) / static_cast<double>(i + 1) * f;
    if (term <= sum * 1e-17) break;
  }
  return sum;
}

/// The standard normal quantile: z with Phi(z) = c (0 < c < 1), by bisection on erfc.
[[nodiscard]] inline double normal_quantile(double c) noexcept {
  double lo = -40, hi = 40;
  for (int i = 0; i < 200 && hi - lo > 1e-15; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (0.5 * std::erfc(-mid / 1.4142135623730950488) < c)
      lo = mid;
    else
      hi = mid;
  }
  return 0.5 * (lo + hi);
}

inline void check_confidence(double c) {
  if (!(c >= 0.5 && c < 1))
    TOKCHRON_THROW(std::invalid_argument, "tokchron: confidence must be in [0.5, 1)");
}
}  // namespace detail

/// P(B <= k) for B ~ Binomial(n, p); p outside [0, 1] is clamped. noexcept, no allocation.
[[nodiscard]] inline double binomial_cdf(std::uint64_t n, double p, std::uint64_t k) noexcept {
  if (k >= n || !(p > 0)) return 1.0;
  if (p >= 1) return 0.0;
  if (k <= detail::binomial_mode(n, p)) return std::min(1.0, detail::binomial_sum_below(n, p, k));
  return std::max(0.0, 1.0 - detail::binomial_sum_above(n, p, k + 1));
}

/// P(B >= k) for B ~ Binomial(n, p); p outside [0, 1] is clamped.
[[nodiscard]] inline double binomial_sf(std::uint64_t n, double p, std::uint64_t k) noexcept {
  if (k == 0) return 1.0;
  if (k > n || !(p > 0)) return 0.0;
  if (p >= 1) return 1.0;
  if (k >= detail::binomial_mode(n, p)) return std::min(1.0, detail::binomial_sum_above(n, p, k));
  return std::max(0.0, 1.0 - detail::binomial_sum_below(n, p, k - 1));
}

/// 1-based ranks of the order statistics that bound a quantile: `lower` = 0 means no lower
/// bound, `upper` = n + 1 means no upper bound.
struct order_statistic_ranks {
  std::uint64_t lower = 0;
  std::uint64_t upper = 1;
};

/// The ranks of the distribution-free one-sided `confidence` bounds for the q-quantile from n
/// samples (see the file comment). O(log n) binomial tails. Throws std::invalid_argument for q
/// outside [0, 1] or confidence outside [0.5, 1).
[[nodiscard]] inline order_statistic_ranks quantile_bound_ranks(std::uint64_t n, double q,
                                                                double confidence) {
  detail::check_probability(q);
  detail::check_confidence(confidence);
  order_statistic_ranks r{0, n + 1};
  if (n == 0) return r;
  const double alpha = 1 - confidence;
  // lower: the largest l in [1, n] with P(B <= l - 1) <= alpha (monotone in l).
  if (binomial_cdf(n, q, 0) <= alpha) {
    std::uint64_t lo = 1, hi = n;  // lo satisfies
    while (lo < hi) {
      const std::uint64_t mid = lo + (hi - lo + 1) / 2;
      if (binomial_cdf(n, q, mid - 1) <= alpha)
        lo = mid;
      else
        hi = mid - 1;
    }
    r.lower = lo;
  }
  // upper: the smallest u in [1, n] with P(B >= u) <= alpha.
  if (binomial_sf(n, q, n) <= alpha) {
    std::uint64_t lo = 1, hi = n;  // hi satisfies
    while (lo < hi) {
      const std::uint64_t mid = lo + (hi - lo) / 2;
      if (binomial_sf(n, q, mid) <= alpha)
        hi = mid;
      else
        lo = mid + 1;
    }
    r.upper = hi;
  }
  return r;
}

/// The early-stopping test: with `n` samples of which `misses` miss the threshold, and a
/// percentile objective that allows a share `allowed_miss_rate` of misses (1 - q for `<`, q for
/// `>`), true when the objective passes at `confidence`: P(Binomial(n, rate) <= misses) <= 1 - c.
[[nodiscard]] inline bool percentile_passes(std::uint64_t n, std::uint64_t misses,
                                            double allowed_miss_rate, double confidence) noexcept {
  if (n == 0 || misses >= n) return false;
  return binomial_cdf(n, allowed_miss_rate, misses) <= 1 - confidence;
}

/// The smallest total sample count N >= n at which `percentile_passes(N, misses(N), ...)` holds,
/// where misses(N) = `misses` (no further misses) when `at_observed_rate` is false, or
/// floor(N * misses / n) otherwise. Empty when no N up to 2^40 passes (the rate is too high, or
/// the objective is p100). Exponential then binary search: O(log N) binomial tails.
[[nodiscard]] inline std::optional<std::uint64_t> samples_to_pass(std::uint64_t n,
                                                                  std::uint64_t misses,
                                                                  double allowed_miss_rate,
                                                                  double confidence,
                                                                  bool at_observed_rate) noexcept {
  constexpr std::uint64_t limit = std::uint64_t{1} << 40;
  if (!(allowed_miss_rate > 0)) return std::nullopt;
  if (at_observed_rate && n > 0 &&
      static_cast<double>(misses) >= allowed_miss_rate * static_cast<double>(n))
    return std::nullopt;
  auto misses_at = [&](std::uint64_t total) -> std::uint64_t {
    if (!at_observed_rate || n == 0) return misses;
    return static_cast<std::uint64_t>(std::floor(
        static_cast<double>(total) * static_cast<double>(misses) / static_cast<double>(n)));
  };
  auto ok = [&](std::uint64_t total) {
    return percentile_passes(total, misses_at(total), allowed_miss_rate, confidence);
  };
  std::uint64_t lo = std::max<std::uint64_t>(n, misses + 1);
  if (ok(lo)) return lo;
  std::uint64_t hi = lo;
  do {
    lo = hi;
    if (hi >= limit) return std::nullopt;
    hi = std::min(limit, hi * 2);
  } while (!ok(hi));
  while (hi - lo > 1) {  // lo fails, hi passes
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (ok(mid))
      hi = mid;
    else
      lo = mid;
  }
  return hi;
}

/// How objectives are judged.
struct evaluation_options {
  /// One-sided confidence of each bound: a pass (or fail) is wrong with probability at most
  /// 1 - confidence. In [0.5, 1); MLPerf's early stopping uses 0.99.
  double confidence = 0.95;
  /// The percentile method of the point estimate, for estimators that take one (exact).
  quantile_method method = quantile_method::linear;
};

namespace detail {
/// The k-th smallest sample (1 <= k <= n) as the estimator reports it.
template <class E>
[[nodiscard]] double order_statistic(const E& e, std::uint64_t n, std::uint64_t k) {
  if constexpr (has_at_rank<E>::value) {
    return static_cast<double>(e.at_rank(k - 1));
  } else {
    // q = (k - 1)/(n - 1) selects x_(k) under the linear, lower and nearest-rank definitions.
    const double q =
        n <= 1 ? 0.0 : std::min(1.0, static_cast<double>(k - 1) / static_cast<double>(n - 1));
    if constexpr (has_quantile_method<E>::value)
      return static_cast<double>(*e.quantile(q, quantile_method::linear));
    else
      return static_cast<double>(*e.quantile(q));
  }
}

/// How many samples are < x (or <= x when `inclusive`).
template <class E>
[[nodiscard]] std::uint64_t count_below(const E& e, std::uint64_t n, double x, bool inclusive) {
  using T = typename E::value_type;
  if constexpr (has_rank<E>::value && std::is_floating_point_v<T>) {
    const T t = static_cast<T>(x);
    return static_cast<std::uint64_t>(
        e.rank(inclusive ? t : std::nextafter(t, -std::numeric_limits<T>::infinity())));
  } else {
    // the largest k with x_(k) < x (or <= x), by bisection on order statistics
    auto below = [&](std::uint64_t k) {
      const double v = order_statistic(e, n, k);
      return inclusive ? v <= x : v < x;
    };
    if (n == 0 || !below(1)) return 0;
    std::uint64_t lo = 1, hi = n;
    while (lo < hi) {
      const std::uint64_t mid = lo + (hi - lo + 1) / 2;
      if (below(mid))
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  }
}

[[nodiscard]] inline double widen_up(double v, double e) noexcept {
  if (e == 0 || !std::isfinite(v)) return v;
  return v >= 0 ? v / (1 - e) : v / (1 + e);
}
[[nodiscard]] inline double widen_down(double v, double e) noexcept {
  if (e == 0 || !std::isfinite(v)) return v;
  return v >= 0 ? v / (1 + e) : v / (1 - e);
}

/// Sets status from the bounds: the objective's side decides a pass, the other a fail.
inline void decide(verdict& v) noexcept {
  const objective& o = v.target;
  const double pass_side = o.upper_bound() ? v.upper : v.lower;
  const double fail_side = o.upper_bound() ? v.lower : v.upper;
  if (o.holds(pass_side))
    v.status = verdict_status::pass;
  else if (!o.holds(fail_side))
    v.status = verdict_status::fail;
  else
    v.status = verdict_status::insufficient_data;
}
}  // namespace detail

/// Judges objective `o` on the distribution in estimator `e` (any type meeting the estimator
/// contract). Never returns a pass or fail the data cannot support: no samples, too few for the
/// percentile at `opt.confidence`, or an estimator without an error bound give
/// `insufficient_data` with a reason. Throws std::invalid_argument for a confidence outside
/// [0.5, 1) or a percentile outside [0, 100]. Complexity: O(log n) binomial tails and order
/// statistic reads (plus, for undecided percentiles, O(log N) tails for early stopping).
template <class E>
[[nodiscard]] verdict evaluate(const objective& o, const E& e, const evaluation_options& opt = {}) {
  static_assert(is_quantile_estimator_v<E>,
                "E must meet the estimator contract (tokchron/quantile/estimator.hpp)");
  detail::check_confidence(opt.confidence);
  if (o.statistic == slo_statistic::percentile && !(o.percentile >= 0 && o.percentile <= 100))
    TOKCHRON_THROW(std::invalid_argument, "tokchron: objective percentile must be in [0, 100]");
  verdict v;
  v.target = o;
  v.confidence = opt.confidence;
  const std::uint64_t n = e.count();
  v.samples = n;
  if (n == 0) {
    v.reason = "no samples";
    return v;
  }
  auto finish = [&]() {
    v.margin = o.upper_bound() ? o.threshold - *v.measured : *v.measured - o.threshold;
  };
  switch (o.statistic) {
    case slo_statistic::max:
    case slo_statistic::min: {
      const auto x = o.statistic == slo_statistic::max ? e.max() : e.min();
      v.measured = static_cast<double>(*x);
      v.lower = v.upper = *v.measured;
      finish();
      detail::decide(v);
      return v;
    }
    case slo_statistic::mean: {
      v.measured = *e.mean();
      v.lower = v.upper = *v.measured;
      if constexpr (detail::has_stddev<E>::value) {
        if (n >= 2) {
          const double s = static_cast<double>(*e.stddev(1u));
          const double half =
              detail::normal_quantile(opt.confidence) * s / std::sqrt(static_cast<double>(n));
          v.lower = *v.measured - half;
          v.upper = *v.measured + half;
        } else {
          v.reason = "one sample: judged on the observed mean";
        }
      } else {
        v.reason = "estimator gives no variance: judged on the observed mean";
      }
      finish();
      detail::decide(v);
      return v;
    }
    case slo_statistic::percentile: break;
  }
  const double q = o.quantile();
  if constexpr (detail::has_quantile_method<E>::value)
    v.measured = static_cast<double>(*e.quantile(q, opt.method));
  else
    v.measured = static_cast<double>(*e.quantile(q));
  finish();
  const double err = e.relative_error();
  if (!(err >= 0 && err < 1)) {
    v.reason = "estimator has no error bound: percentiles cannot be judged";
    return v;
  }
  const order_statistic_ranks r = quantile_bound_ranks(n, q, opt.confidence);
  if (r.lower >= 1) v.lower = detail::widen_down(detail::order_statistic(e, n, r.lower), err);
  if (r.upper <= n) v.upper = detail::widen_up(detail::order_statistic(e, n, r.upper), err);
  const bool strict =
      o.comparator == slo_comparator::less || o.comparator == slo_comparator::greater_equal;
  // Samples that miss: for `<` those >= T, `<=` those > T, `>` those <= T, `>=` those < T.
  const std::uint64_t below = detail::count_below(e, n, o.threshold, !strict);
  v.misses = o.upper_bound() ? n - below : below;
  detail::decide(v);
  if (v.status == verdict_status::insufficient_data) {
    const bool unbounded = o.upper_bound() ? r.upper > n : r.lower == 0;
    v.reason = unbounded ? "too few samples to bound this percentile at this confidence"
                         : "the confidence bounds straddle the threshold";
    const double rate = o.upper_bound() ? 1 - q : q;
    if (const auto need = samples_to_pass(n, *v.misses, rate, opt.confidence, false))
      v.more_samples_if_no_misses = *need - n;
    if (const auto need = samples_to_pass(n, *v.misses, rate, opt.confidence, true))
      v.more_samples_needed = *need - n;
  }
  return v;
}

/// Judges every objective of `s`. `estimator_for(slo_metric)` returns a pointer to the
/// estimator holding that metric's distribution, or nullptr when it was not recorded (that
/// objective is then insufficient_data, "metric not recorded").
template <class Lookup>
[[nodiscard]] sla_verdict evaluate(const sla& s, Lookup&& estimator_for,
                                   const evaluation_options& opt = {}) {
  sla_verdict out;
  out.verdicts.reserve(s.objectives.size());
  for (const objective& o : s.objectives) {
    const auto* e = estimator_for(o.metric);
    if (e == nullptr) {
      verdict v;
      v.target = o;
      v.confidence = opt.confidence;
      v.reason = "metric not recorded";
      out.verdicts.push_back(v);
    } else {
      out.verdicts.push_back(evaluate(o, *e, opt));
    }
  }
  return out;
}

/// One estimator per `slo_metric`, fed one finished request at a time: the distributions an
/// SLA is judged on. Successful requests (stop or length) feed every metric they define;
/// failed ones are only counted (`failed()`), as the public tools leave them out of latency
/// statistics (goodput counts them as not good). ITL is per token (`for_each_itl_per_token`)
/// and fluidity per request, both only for timelines that keep chunks; fluidity only when
/// deadlines were given. `add` is noexcept (a sample the estimator refuses is counted there).
/// Single writer.
///
/// It is the single-writer mode of the aggregation model (`basic_distributions<Estimator>`,
/// collect/distributions.hpp, recording `distributions_options::slo(deadlines)`) with the SLA
/// judged on it; `add` is its `record`. Many recording threads: a `distributions<sharded, E>`
/// (tokchron/distributions.hpp) whose snapshots are merged into one of these.
template <class Estimator = exact_quantiles<>>
class slo_distributions : public basic_distributions<Estimator> {
  using base = basic_distributions<Estimator>;

 public:
  using estimator_type = Estimator;

  slo_distributions() : base(distributions_options::slo()) {}
  /// Also records each request's fluidity-index under these deadlines (throws
  /// std::invalid_argument unless both are positive and finite).
  explicit slo_distributions(const fluidity_deadlines& d, const Estimator& proto = Estimator())
      : base(distributions_options::slo(d), proto) {}
  /// Every metric starts as a copy of `proto` (e.g. a log_histogram with a chosen precision).
  explicit slo_distributions(const Estimator& proto) : base(distributions_options::slo(), proto) {}

  /// Records a finished timeline's metrics (`record`; unfinished ones are ignored: false).
  template <class Timeline>
  bool add(const Timeline& tl) noexcept {
    return this->record(tl);
  }
  /// Records one request's metrics (`record`): its canonical metrics (`canonical_metrics`), or
  /// the request as a profile saw it (`evaluate(profile, timeline, ...)`: its TTFT origin, TPOT
  /// rule and per-user rate). A request that does not count (`request_metrics::counted`) is a
  /// failure. ITL and fluidity need the chunks: ITL (pooled per chunk or token by the profile)
  /// goes through `add(slo_metric::itl, gap)`, ICL (`for_each_icl`) through
  /// `add(slo_metric::icl, gap)`.
  void add(const request_metrics& m) noexcept { this->record(m); }
  /// `add(metric, x)` adds one sample of `metric` directly; `add(metric, x, count)` `count`
  /// equal samples (one run where the estimator stores runs, as exact_quantiles does).
  using base::add;

  /// Successful requests recorded.
  [[nodiscard]] std::uint64_t succeeded() const noexcept { return this->counts().succeeded; }
  /// Failed requests seen (not in the distributions).
  [[nodiscard]] std::uint64_t failed() const noexcept { return this->counts().failed; }

  /// Judges `s` on these distributions (fluidity objectives are "metric not recorded" when no
  /// deadlines were given).
  [[nodiscard]] sla_verdict evaluate(const sla& s, const evaluation_options& opt = {}) const {
    return tokchron::evaluate(
        s,
        [&](slo_metric m) -> const Estimator* {
          if (m == slo_metric::fluidity && !this->records_fluidity()) return nullptr;
          return &(*this)[m];
        },
        opt);
  }
};

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_SLA_EVALUATOR_HPP
