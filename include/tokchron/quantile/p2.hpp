// SPDX-License-Identifier: MIT
// tokchron-requires: boost
#ifndef TOKCHRON_QUANTILE_P2_HPP
#define TOKCHRON_QUANTILE_P2_HPP

/// \file
/// `p2_quantiles`: Boost.Accumulators' extended P² estimator behind tokchron's estimator
/// contract. An adaptor (the only core-area header that includes Boost), kept for code bases
/// that already report P² numbers and as the baseline the benchmarks compare against.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push  // Boost 1.74 uses std::bind1st (deprecated in C++11)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
#include <boost/accumulators/accumulators.hpp>
#include <boost/accumulators/statistics/extended_p_square.hpp>
#include <boost/accumulators/statistics/stats.hpp>
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include "tokchron/config.hpp"
#include "tokchron/quantile/estimator.hpp"
#include "tokchron/quantile/exact.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// The extended P² algorithm (Jain & Chlamtac 1985, extended to m quantiles) as implemented by
/// Boost.Accumulators `extended_p_square`: O(m) memory, one pass.
///
/// Its limits are part of the type: the probabilities are declared at construction and
/// `quantile(q)` answers only those (std::invalid_argument for any other q); there is no
/// `merge` (P² markers do not combine, boostorg/accumulators#17), so
/// `is_mergeable_estimator_v<p2_quantiles>` is false; and there is no error bound
/// (`relative_error()` is infinity): P² interpolates marker heights parabolically, which
/// drifts on sorted or shifting input by several percent (measured: docs/library/estimators.md).
/// Boost's answers are meaningless below 2m + 3 samples, so until then this adaptor keeps the
/// samples and answers exactly (numpy's linear method). count, sum, min and max are exact;
/// NaN and infinities are rejected and counted. `add` is O(m), about 40-60 ns for m = 5.
/// Thread safety: one thread at a time, readers included.
class p2_quantiles {
 public:
  using value_type = double;

  /// Estimates the given probabilities (each in (0, 1); order and repeats do not matter).
  /// Throws std::invalid_argument when the list is empty or a probability is outside (0, 1).
  explicit p2_quantiles(std::vector<double> probabilities)
      : probabilities_(checked(std::move(probabilities))),
        acc_(boost::accumulators::extended_p_square_probabilities = probabilities_) {
    warmup_.reserve(warmup_size());
  }
  p2_quantiles(std::initializer_list<double> probabilities)
      : p2_quantiles(std::vector<double>(probabilities)) {}

  /// Records `x`; false (and counted) for NaN and infinities. O(m).
  bool add(double x) noexcept {
    if (TOKCHRON_UNLIKELY(!std::isfinite(x))) {
      ++rejected_;
      return false;
    }
    if (count_ < warmup_size()) warmup_.push_back(x);  // reserved: never allocates
    TOKCHRON_TRY { acc_(x); }
    TOKCHRON_CATCH_ALL {
      ++rejected_;
      return false;
    }
    ++count_;
    sum_ += x;
    min_ = std::min(min_, x);
    max_ = std::max(max_, x);
    return true;
  }

  [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
  [[nodiscard]] std::uint64_t rejected() const noexcept { return rejected_; }
  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
  [[nodiscard]] double sum() const noexcept { return sum_; }
  [[nodiscard]] std::optional<double> mean() const noexcept {
    if (count_ == 0) return std::nullopt;
    return sum_ / static_cast<double>(count_);
  }
  [[nodiscard]] std::optional<double> min() const noexcept {
    return detail::when_sampled(count_, min_);
  }
  [[nodiscard]] std::optional<double> max() const noexcept {
    return detail::when_sampled(count_, max_);
  }
  /// The estimate for declared probability `q` (std::invalid_argument for any other q);
  /// exact (linear method) below 2m + 3 samples; empty when there are none.
  [[nodiscard]] std::optional<double> quantile(double q) const {
    detail::check_probability(q);
    const auto it = std::find_if(probabilities_.begin(), probabilities_.end(),
                                 [q](double p) { return std::fabs(p - q) <= 1e-12; });
    if (it == probabilities_.end())
      TOKCHRON_THROW(std::invalid_argument,
                     "tokchron: p2_quantiles answers only the probabilities it was built with");
    if (count_ == 0) return std::nullopt;
    if (count_ < warmup_size()) {
      std::vector<double> s(warmup_);
      std::sort(s.begin(), s.end());
      return detail::sorted_quantile(s.begin(), s.size(), q, quantile_method::linear);
    }
    const auto r = boost::accumulators::extended_p_square(acc_);
    const double v = r[it - probabilities_.begin()];
    return std::min(std::max(v, min_), max_);
  }
  /// No guaranteed bound: infinity.
  [[nodiscard]] static constexpr double relative_error() noexcept {
    return std::numeric_limits<double>::infinity();
  }

  /// The declared probabilities, ascending.
  [[nodiscard]] const std::vector<double>& probabilities() const noexcept { return probabilities_; }
  /// Samples answered exactly before P² takes over: 2m + 3.
  [[nodiscard]] std::size_t warmup_size() const noexcept { return 2 * probabilities_.size() + 3; }

 private:
  using acc_type = boost::accumulators::accumulator_set<
      double, boost::accumulators::stats<boost::accumulators::tag::extended_p_square>>;

  static std::vector<double> checked(std::vector<double> p) {
    if (p.empty())
      TOKCHRON_THROW(std::invalid_argument,
                     "tokchron: p2_quantiles needs at least one probability");
    for (double x : p)
      if (!(x > 0.0 && x < 1.0))
        TOKCHRON_THROW(std::invalid_argument,
                       "tokchron: p2_quantiles probabilities must be in (0, 1)");
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
    return p;
  }

  std::vector<double> probabilities_;
  acc_type acc_;
  std::vector<double> warmup_;
  std::uint64_t count_ = 0;
  std::uint64_t rejected_ = 0;
  double sum_ = 0;
  double min_ = std::numeric_limits<double>::infinity();
  double max_ = -std::numeric_limits<double>::infinity();
};

static_assert(is_quantile_estimator_v<p2_quantiles>);
static_assert(!is_mergeable_estimator_v<p2_quantiles>);

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_QUANTILE_P2_HPP
