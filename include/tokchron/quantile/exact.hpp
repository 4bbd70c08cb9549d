// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_QUANTILE_EXACT_HPP
#define TOKCHRON_QUANTILE_EXACT_HPP

/// \file
/// `exact_quantiles`: keeps every sample and answers quantiles exactly, by any tool's method.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/quantile/estimator.hpp"

TOKCHRON_BEGIN_NAMESPACE

namespace detail {
/// numpy's linear interpolation between a and b (`numpy.lib._function_base_impl._lerp`),
/// reproduced operation for operation so results agree bit for bit.
[[nodiscard]] inline double numpy_lerp(double a, double b, double t) noexcept {
  const double diff = b - a;
  double r = a + diff * t;
  if (t >= 0.5) r = b - diff * (1.0 - t);
  if (a == b) r = a;
  return r;
}

/// The quantile of already sorted samples by `method` (n > 0, q in [0, 1]).
template <class It>
[[nodiscard]] double sorted_quantile(It first, std::size_t n, double q,
                                     quantile_method method) noexcept {
  switch (method) {
    case quantile_method::lower: {
      const double h = static_cast<double>(n) * q;
      std::size_t i = static_cast<std::size_t>(std::floor(h));
      if (i > n - 1) i = n - 1;
      return static_cast<double>(first[static_cast<std::ptrdiff_t>(i)]);
    }
    case quantile_method::nearest_rank: {
      const double h = std::ceil(q * static_cast<double>(n));
      std::size_t i = h < 1.0 ? 0 : static_cast<std::size_t>(h) - 1;
      if (i > n - 1) i = n - 1;
      return static_cast<double>(first[static_cast<std::ptrdiff_t>(i)]);
    }
    case quantile_method::linear:
    default: {
      const double h = q * static_cast<double>(n - 1);
      const double lo = std::floor(h);
      std::size_t i = static_cast<std::size_t>(lo);
      if (i > n - 1) i = n - 1;
      const std::size_t j = i + 1 < n ? i + 1 : n - 1;
      return numpy_lerp(static_cast<double>(first[static_cast<std::ptrdiff_t>(i)]),
                        static_cast<double>(first[static_cast<std::ptrdiff_t>(j)]), h - lo);
    }
  }
}

inline void check_probability(double q) {
  if (!(q >= 0.0 && q <= 1.0))
    TOKCHRON_THROW(std::invalid_argument, "tokchron: quantile probability must be in [0, 1]");
}
}  // namespace detail

/// Keeps every sample; quantiles are exact under any `quantile_method`, so a tool's numbers can
/// be reproduced bit for bit. Memory: 8 bytes per sample. `add` is amortised O(1); the first
/// query after an `add` sorts (O(n log n)), later ones are O(1).
///
/// NaN and infinities are rejected and counted. A sample that cannot be stored (allocation
/// failure) is rejected and counted the same way, so `count()` always equals the samples kept.
/// Thread safety: one thread at a time, readers included (a query may sort the samples).
template <class T = double, class Allocator = std::allocator<T>>
class exact_quantiles {
  static_assert(std::is_arithmetic_v<T>, "exact_quantiles holds arithmetic samples");

 public:
  using value_type = T;
  using allocator_type = Allocator;

  exact_quantiles() = default;
  explicit exact_quantiles(const Allocator& a) : samples_(a) {}

  /// Records `x`; false (and counted in `rejected()`) for NaN, infinity or allocation failure.
  bool add(T x) noexcept {
    if constexpr (std::is_floating_point_v<T>) {
      if (TOKCHRON_UNLIKELY(!std::isfinite(x))) return reject();
    }
    TOKCHRON_TRY { samples_.push_back(x); }
    TOKCHRON_CATCH_ALL { return reject(); }
    sorted_ = samples_.size() <= 1 || (sorted_ && !(x < samples_[samples_.size() - 2]));
    sum_ += static_cast<double>(x);
    return true;
  }

  /// Appends every sample of `other`. Throws std::bad_alloc if memory runs out (nothing changes).
  void merge(const exact_quantiles& other) {
    if (other.samples_.empty()) {
      rejected_ += other.rejected_;
      return;
    }
    const bool in_order = sorted_ && other.sorted_ &&
                          (samples_.empty() || !(other.samples_.front() < samples_.back()));
    samples_.insert(samples_.end(), other.samples_.begin(), other.samples_.end());
    sorted_ = in_order;
    sum_ += other.sum_;
    rejected_ += other.rejected_;
  }

  /// Replaces the contents with `samples`, taking their storage (no copy): the sum is
  /// accumulated in their order, as `add` one by one would, and NaN and infinities are removed
  /// and counted in `rejected()`. A vector that is already sorted is never sorted again.
  /// Throws only where the allocator's move assignment does (never for std::allocator).
  void assign(std::vector<T, Allocator>&& samples) {
    samples_ = std::move(samples);
    sum_ = 0;
    rejected_ = 0;
    if constexpr (std::is_floating_point_v<T>) {
      const auto bad = [](T x) { return !std::isfinite(x); };
      const auto kept = std::remove_if(samples_.begin(), samples_.end(), bad);
      rejected_ = static_cast<std::uint64_t>(samples_.end() - kept);
      samples_.erase(kept, samples_.end());
    }
    for (T x : samples_) sum_ += static_cast<double>(x);
    sorted_ = std::is_sorted(samples_.begin(), samples_.end());
  }

  /// Reserves room for `n` samples (may throw std::bad_alloc).
  void reserve(std::size_t n) { samples_.reserve(n); }
  /// Forgets every sample and the rejected count.
  void clear() noexcept {
    samples_.clear();
    sum_ = 0;
    rejected_ = 0;
    sorted_ = true;
  }

  [[nodiscard]] std::uint64_t count() const noexcept { return samples_.size(); }
  [[nodiscard]] std::uint64_t rejected() const noexcept { return rejected_; }
  [[nodiscard]] bool empty() const noexcept { return samples_.empty(); }
  /// Sum of samples, accumulated in insertion order.
  [[nodiscard]] double sum() const noexcept { return sum_; }
  [[nodiscard]] std::optional<double> mean() const noexcept {
    if (samples_.empty()) return std::nullopt;
    return sum_ / static_cast<double>(samples_.size());
  }
  /// Standard deviation with `ddof` delta degrees of freedom: 0 is the population std (numpy's
  /// default, vLLM), 1 the sample std (pandas, llmperf). Empty when count() <= ddof.
  [[nodiscard]] std::optional<double> stddev(unsigned ddof = 0) const noexcept {
    const std::size_t n = samples_.size();
    if (n <= ddof) return std::nullopt;
    const double m = sum_ / static_cast<double>(n);
    double ss = 0;
    for (T x : samples_) {
      const double d = static_cast<double>(x) - m;
      ss += d * d;
    }
    return std::sqrt(ss / static_cast<double>(n - ddof));
  }
  [[nodiscard]] std::optional<T> min() const noexcept {
    if (samples_.empty()) return std::nullopt;
    sort();
    return samples_.front();
  }
  [[nodiscard]] std::optional<T> max() const noexcept {
    if (samples_.empty()) return std::nullopt;
    sort();
    return samples_.back();
  }
  /// The q-quantile (q in [0, 1]; throws std::invalid_argument otherwise) by numpy's linear
  /// method; empty when there are no samples.
  [[nodiscard]] std::optional<T> quantile(double q) const {
    return quantile(q, quantile_method::linear);
  }
  /// The q-quantile by `method`.
  [[nodiscard]] std::optional<T> quantile(double q, quantile_method method) const {
    detail::check_probability(q);
    if (samples_.empty()) return std::nullopt;
    sort();
    return static_cast<T>(detail::sorted_quantile(samples_.begin(), samples_.size(), q, method));
  }
  /// The number of samples <= x.
  [[nodiscard]] std::uint64_t rank(T x) const noexcept {
    sort();
    return static_cast<std::uint64_t>(std::upper_bound(samples_.begin(), samples_.end(), x) -
                                      samples_.begin());
  }
  /// The share of samples <= x (empty when there are none).
  [[nodiscard]] std::optional<double> cdf(T x) const noexcept {
    if (samples_.empty()) return std::nullopt;
    return static_cast<double>(rank(x)) / static_cast<double>(samples_.size());
  }
  /// Exact: 0.
  [[nodiscard]] static constexpr double relative_error() noexcept { return 0.0; }

  /// The samples as stored: in insertion order until a query sorts them.
  [[nodiscard]] const std::vector<T, Allocator>& samples() const noexcept { return samples_; }
  /// The samples, sorted ascending.
  [[nodiscard]] const std::vector<T, Allocator>& sorted_samples() const noexcept {
    sort();
    return samples_;
  }

 private:
  bool reject() noexcept {
    ++rejected_;
    return false;
  }
  void sort() const noexcept {
    if (!sorted_) {
      std::sort(samples_.begin(), samples_.end());
      sorted_ = true;
    }
  }

  mutable std::vector<T, Allocator> samples_;
  mutable bool sorted_ = true;
  double sum_ = 0;
  std::uint64_t rejected_ = 0;
};

static_assert(is_quantile_estimator_v<exact_quantiles<>>);
static_assert(is_mergeable_estimator_v<exact_quantiles<>>);

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_QUANTILE_EXACT_HPP
