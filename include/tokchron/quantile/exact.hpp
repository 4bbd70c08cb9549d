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
/// `add(x, count)` records `count` equal samples as one run (16 bytes, whatever the count), so
/// memory is bounded by the calls, not by the counts (a chunk of 2^32 - 1 tokens gives one run
/// of per-token ITL samples). Every statistic counts a run as its `count` samples; with runs,
/// order statistics read a sorted merge of samples and runs (O(n + r) memory, built by the
/// first query after a change).
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
    if (TOKCHRON_UNLIKELY(!merged_.empty())) merged_.clear();
    sorted_ = samples_.size() <= 1 || (sorted_ && !(x < samples_[samples_.size() - 2]));
    sum_ += static_cast<double>(x);
    return true;
  }

  /// Records `count` samples equal to `x` as one run; false (and counted once in `rejected()`)
  /// for NaN, infinity or allocation failure. A count of 0 records nothing.
  bool add(T x, std::uint64_t count) noexcept {
    if (count <= 1) return count == 0 ? true : add(x);
    if constexpr (std::is_floating_point_v<T>) {
      if (TOKCHRON_UNLIKELY(!std::isfinite(x))) return reject();
    }
    TOKCHRON_TRY { runs_.emplace_back(x, count); }
    TOKCHRON_CATCH_ALL { return reject(); }
    run_samples_ += count;
    sum_ += static_cast<double>(x) * static_cast<double>(count);
    merged_.clear();
    return true;
  }

  /// Appends every sample of `other`. Throws std::bad_alloc if memory runs out (nothing changes).
  void merge(const exact_quantiles& other) {
    if (!other.runs_.empty()) {
      runs_.reserve(runs_.size() + other.runs_.size());  // may throw: nothing changed yet
      samples_.reserve(samples_.size() + other.samples_.size());
      runs_.insert(runs_.end(), other.runs_.begin(), other.runs_.end());
      run_samples_ += other.run_samples_;
      merged_.clear();
    }
    if (other.samples_.empty()) {
      rejected_ += other.rejected_;
      if (!other.runs_.empty()) sum_ += other.sum_;
      return;
    }
    const bool in_order = sorted_ && other.sorted_ &&
                          (samples_.empty() || !(other.samples_.front() < samples_.back()));
    samples_.insert(samples_.end(), other.samples_.begin(), other.samples_.end());
    merged_.clear();
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
    runs_.clear();
    run_samples_ = 0;
    merged_.clear();
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
    runs_.clear();
    run_samples_ = 0;
    merged_.clear();
    sum_ = 0;
    rejected_ = 0;
    sorted_ = true;
  }

  [[nodiscard]] std::uint64_t count() const noexcept { return samples_.size() + run_samples_; }
  [[nodiscard]] std::uint64_t rejected() const noexcept { return rejected_; }
  [[nodiscard]] bool empty() const noexcept { return count() == 0; }
  /// Sum of samples, accumulated in insertion order.
  [[nodiscard]] double sum() const noexcept { return sum_; }
  [[nodiscard]] std::optional<double> mean() const noexcept {
    if (empty()) return std::nullopt;
    return sum_ / static_cast<double>(count());
  }
  /// Standard deviation with `ddof` delta degrees of freedom: 0 is the population std (numpy's
  /// default, vLLM), 1 the sample std (pandas, llmperf). Empty when count() <= ddof.
  [[nodiscard]] std::optional<double> stddev(unsigned ddof = 0) const noexcept {
    const std::uint64_t n = count();
    if (n <= ddof) return std::nullopt;
    const double m = sum_ / static_cast<double>(n);
    double ss = 0;
    for (T x : samples_) {
      const double d = static_cast<double>(x) - m;
      ss += d * d;
    }
    for (const auto& [x, c] : runs_) {
      const double d = static_cast<double>(x) - m;
      ss += static_cast<double>(c) * d * d;
    }
    return std::sqrt(ss / static_cast<double>(n - ddof));
  }
  [[nodiscard]] std::optional<T> min() const noexcept {
    if (empty()) return std::nullopt;
    return at_rank(0);
  }
  [[nodiscard]] std::optional<T> max() const noexcept {
    if (empty()) return std::nullopt;
    return at_rank(count() - 1);
  }
  /// The sample of 0-based rank `i` in ascending order (i < count()). The first call after a
  /// change sorts; with runs it also builds the sorted merge, and may then return the lowest
  /// value of T if that merge cannot be allocated.
  [[nodiscard]] T at_rank(std::uint64_t i) const noexcept {
    sort();
    if (runs_.empty()) return samples_[static_cast<std::size_t>(i)];
    if (!merge_runs()) return std::numeric_limits<T>::lowest();
    const auto it = std::upper_bound(merged_.begin(), merged_.end(), i,
                                     [](std::uint64_t r, const auto& e) { return r < e.second; });
    return it->first;
  }
  /// The q-quantile (q in [0, 1]; throws std::invalid_argument otherwise) by numpy's linear
  /// method; empty when there are no samples.
  [[nodiscard]] std::optional<T> quantile(double q) const {
    return quantile(q, quantile_method::linear);
  }
  /// The q-quantile by `method`.
  [[nodiscard]] std::optional<T> quantile(double q, quantile_method method) const {
    detail::check_probability(q);
    if (empty()) return std::nullopt;
    sort();
    if (runs_.empty())
      return static_cast<T>(detail::sorted_quantile(samples_.begin(), samples_.size(), q, method));
    if (!merge_runs()) detail::throw_bad_alloc();
    return static_cast<T>(detail::sorted_quantile(rank_reader{this}, count(), q, method));
  }
  /// The number of samples <= x.
  [[nodiscard]] std::uint64_t rank(T x) const noexcept {
    sort();
    auto r = static_cast<std::uint64_t>(std::upper_bound(samples_.begin(), samples_.end(), x) -
                                        samples_.begin());
    for (const auto& [v, c] : runs_)
      if (!(x < v)) r += c;
    return r;
  }
  /// The share of samples <= x (empty when there are none).
  [[nodiscard]] std::optional<double> cdf(T x) const noexcept {
    if (empty()) return std::nullopt;
    return static_cast<double>(rank(x)) / static_cast<double>(count());
  }
  /// Exact: 0.
  [[nodiscard]] static constexpr double relative_error() noexcept { return 0.0; }

  /// The samples added one at a time, as stored: in insertion order until a query sorts them.
  /// Runs (`add(x, count)`) are in `runs()`.
  [[nodiscard]] const std::vector<T, Allocator>& samples() const noexcept { return samples_; }
  /// The runs of equal samples added with `add(x, count)`, count > 1: (value, count).
  [[nodiscard]] const std::vector<std::pair<T, std::uint64_t>>& runs() const noexcept {
    return runs_;
  }
  /// The samples added one at a time, sorted ascending (runs are not in it: see `at_rank`).
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
      merged_.clear();
    }
  }
  /// Builds `merged_`: the sorted samples and runs as (value, samples up to and including it).
  /// False when it cannot be allocated.
  bool merge_runs() const noexcept {
    if (!merged_.empty()) return true;
    TOKCHRON_TRY {
      std::vector<std::pair<T, std::uint64_t>> blocks(runs_.begin(), runs_.end());
      std::sort(blocks.begin(), blocks.end());
      merged_.reserve(samples_.size() + blocks.size());
      std::size_t i = 0, j = 0;
      std::uint64_t total = 0;
      while (i < samples_.size() || j < blocks.size()) {
        if (j == blocks.size() || (i < samples_.size() && samples_[i] < blocks[j].first)) {
          merged_.emplace_back(samples_[i++], ++total);
        } else {
          total += blocks[j].second;
          merged_.emplace_back(blocks[j++].first, total);
        }
      }
      return true;
    }
    TOKCHRON_CATCH_ALL {
      merged_.clear();
      return false;
    }
  }
  struct rank_reader {  // the order statistics by rank, for sorted_quantile
    const exact_quantiles* q;
    T operator[](std::ptrdiff_t i) const noexcept {
      return q->at_rank(static_cast<std::uint64_t>(i));
    }
  };

  mutable std::vector<T, Allocator> samples_;
  std::vector<std::pair<T, std::uint64_t>> runs_;
  std::uint64_t run_samples_ = 0;
  /// With runs: the sorted merge (value, cumulative count), rebuilt after a change.
  mutable std::vector<std::pair<T, std::uint64_t>> merged_;
  mutable bool sorted_ = true;
  double sum_ = 0;
  std::uint64_t rejected_ = 0;
};

static_assert(is_quantile_estimator_v<exact_quantiles<>>);
static_assert(is_mergeable_estimator_v<exact_quantiles<>>);

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_QUANTILE_EXACT_HPP
