// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_QUANTILE_WINDOWED_HPP
#define TOKCHRON_QUANTILE_WINDOWED_HPP

/// \file
/// `windowed<Estimator, Clock>`: the last W seconds of a distribution (e.g. 60 s as 6 slices of
/// 10 s), for online SLA monitors. A ring of estimators; a slice rolls over on the injected clock.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "tokchron/clock.hpp"
#include "tokchron/config.hpp"
#include "tokchron/quantile/estimator.hpp"
#include "tokchron/quantile/log_histogram.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// A sliding window over a mergeable estimator: `slices` estimators, each covering
/// `window / slices` of the clock's time, aligned to the clock's epoch (slice k covers
/// [k d, (k + 1) d)). At time t (slice K) the view holds slices K - slices + 1 .. K, i.e. the
/// samples of the last (slices - 1) d + (t mod d): between W - d and W, so more slices give a
/// smoother window.
///
/// `add(x)` reads the clock once and records into the current slice; when the clock has
/// moved into a new slice, that slice's ring slot is cleared and reused (`Estimator::clear()`,
/// which for `log_histogram` keeps its memory: no allocation in steady state). `add(t, x)`
/// takes a time already read. Samples the window cannot show are refused, never dropped
/// silently: a sample older than the window (its slice is no longer live at the clock's now,
/// or has left the ring) is counted in `late()`, one in a slice later than the clock's current
/// slice in `future()` (a sample from the future would otherwise push every present one out of
/// the ring), and a time outside the time range of clock.hpp in `late()` (below) or `future()`
/// (above); all of them in `rejected()`. Late counts belong to the live slice they were
/// refused in and expire with it; the future count lasts until `clear()`. The hot path does not
/// read the clock: a sample in the slice last recorded into is taken as it is, and expires
/// with that slice. Queries evaluate at the
/// clock's now (or a given time): counts, sum, min, max read the live slices; `quantile` and
/// `snapshot` merge them (O(slices x buckets)). The class meets the estimator contract itself (not
/// mergeable), so SLA code generic over estimators accepts it. Error bound: the estimator's.
///
/// Overflow: the slice arithmetic (slice numbers, slice starts and ends, the ring's span) is done
/// in 64-bit integers whatever the clock's tick type, and every time it reads is either inside
/// the time range (`add` refuses the rest) or, for a query, moved to the nearest end of the range
/// first (`detail::clamp_to_time_range`): a query at INT64_MIN or INT64_MAX reads the window at
/// that end. So no slice width, slice count or time overflows, including 1-tick slices at the
/// edges of int64 and clocks with a 16- or 32-bit tick count (a slice start below what such a
/// tick count holds is handed to `for_each_slice` as its lowest value). The slice count is at
/// most `max_slices` and at most the window's ticks.
///
/// Thread safety: one writer; concurrent readers only while nobody writes.
template <class Estimator = log_histogram, class Clock = default_clock>
class windowed {
  static_assert(is_mergeable_estimator_v<Estimator>, "windowed needs a mergeable estimator");
  static_assert(is_clock_v<Clock>, "windowed needs a clock (see clock.hpp)");
  static_assert(std::is_integral_v<typename Clock::duration::rep> &&
                    std::is_signed_v<typename Clock::duration::rep> &&
                    sizeof(typename Clock::duration::rep) <= sizeof(std::int64_t),
                "windowed needs a clock whose tick count is a signed integer of at most 64 bits");

 public:
  using estimator_type = Estimator;
  using clock_type = Clock;
  using value_type = typename Estimator::value_type;
  using duration = typename Clock::duration;
  using time_point = typename Clock::time_point;

  /// The most slices a window holds (each is an estimator: 2^20 of them is already far more
  /// memory than a window needs).
  static constexpr std::size_t max_slices = std::size_t{1} << 20;

  /// A window of `window` split into `slices` equal slices; every slice starts as a copy of
  /// `prototype` (so its precision carries). Throws std::invalid_argument unless window > 0,
  /// inside the time range, 1 <= slices <= max_slices and window divides into `slices` whole
  /// ticks (so slices <= the window's ticks).
  windowed(duration window, std::size_t slices, Clock clock = Clock{},
           const Estimator& prototype = Estimator{})
      : clock_(std::move(clock)), prototype_(prototype), window_(window) {
    // Compared as unsigned before any cast: a slice count above the tick type's range (SIZE_MAX
    // cast to int64 is -1) must not reach the division.
    if (window.count() <= 0 || slices == 0 || slices > max_slices || !in_time_range(window) ||
        static_cast<std::uint64_t>(slices) > static_cast<std::uint64_t>(window.count()) ||
        static_cast<std::int64_t>(window.count()) % static_cast<std::int64_t>(slices) != 0)
      TOKCHRON_THROW(std::invalid_argument,
                     "tokchron: windowed needs window > 0, inside the time range, split into "
                     "1 to max_slices (2^20) slices of a whole number of ticks each");
    slice_ = duration(static_cast<rep>(static_cast<std::int64_t>(window.count()) /
                                       static_cast<std::int64_t>(slices)));
    prototype_.clear();
    slots_.assign(slices, slot{prototype_, never, 0});
  }

  /// Records `x` at the clock's now. False if the estimator rejected it.
  bool add(value_type x) noexcept { return add(clock_.now(), x); }
  /// Records `x` at time `t`. False if `t` is older than the window (counted in late()), in a
  /// slice after the clock's now (counted in future()) or the estimator rejected it.
  bool add(time_point t, value_type x) noexcept {
    const auto ticks = static_cast<std::int64_t>(t.time_since_epoch().count());
    if (TOKCHRON_LIKELY(ticks >= current_start_ && ticks < current_end_))
      return slots_[current_].est.add(x);
    return add_slow(t, x);
  }

  /// The live slices merged into one estimator (as of the clock's now, or `now`).
  [[nodiscard]] Estimator snapshot() const { return snapshot(clock_.now()); }
  [[nodiscard]] Estimator snapshot(time_point now) const {
    Estimator r = prototype_;
    for_each_slice(now, [&](const Estimator& e, time_point) { r.merge(e); });
    return r;
  }
  /// Calls f(const Estimator&, time_point slice_start) for each live slice, oldest first.
  template <class F>
  void for_each_slice(time_point now, F&& f) const {
    const std::int64_t k_now = slice_of(now);
    const auto n = static_cast<std::int64_t>(slots_.size());
    for (std::int64_t k = k_now - n + 1; k <= k_now; ++k) {
      const slot& s = slots_[index_of(k)];
      if (s.k == k) f(s.est, slice_start(k));
    }
  }

  // The estimator contract, evaluated at the clock's now.
  [[nodiscard]] std::uint64_t count() const noexcept { return count(clock_.now()); }
  [[nodiscard]] std::uint64_t count(time_point now) const noexcept {
    std::uint64_t c = 0;
    for_each_live(now, [&](const slot& s) { c += s.est.count(); });
    return c;
  }
  /// Samples refused by the live slices, late ones included, plus every future one.
  [[nodiscard]] std::uint64_t rejected() const noexcept {
    std::uint64_t c = future_;
    for_each_live(clock_.now(), [&](const slot& s) { c += s.est.rejected() + s.late; });
    return c;
  }
  /// Samples refused because their time was in a slice after the clock's now or above the time
  /// range (or the clock's now was outside the range), since construction or `clear()`.
  [[nodiscard]] std::uint64_t future() const noexcept { return future_; }
  /// Samples dropped because their time was older than the window (live slices).
  [[nodiscard]] std::uint64_t late() const noexcept {
    std::uint64_t c = 0;
    for_each_live(clock_.now(), [&](const slot& s) { c += s.late; });
    return c;
  }
  [[nodiscard]] bool empty() const noexcept { return count() == 0; }
  [[nodiscard]] double sum() const noexcept {
    double r = 0;
    for_each_live(clock_.now(), [&](const slot& s) { r += s.est.sum(); });
    return r;
  }
  [[nodiscard]] std::optional<double> mean() const noexcept {
    const time_point now = clock_.now();
    std::uint64_t c = 0;
    double r = 0;
    for_each_live(now, [&](const slot& s) {
      c += s.est.count();
      r += s.est.sum();
    });
    if (c == 0) return std::nullopt;
    return r / static_cast<double>(c);
  }
  [[nodiscard]] std::optional<value_type> min() const noexcept {
    std::optional<value_type> r;
    for_each_live(clock_.now(), [&](const slot& s) {
      const auto m = s.est.min();
      if (m && (!r || *m < *r)) r = m;
    });
    return r;
  }
  [[nodiscard]] std::optional<value_type> max() const noexcept {
    std::optional<value_type> r;
    for_each_live(clock_.now(), [&](const slot& s) {
      const auto m = s.est.max();
      if (m && (!r || *m > *r)) r = m;
    });
    return r;
  }
  /// The q-quantile of the live window (merges the slices; may throw std::bad_alloc, and
  /// std::invalid_argument for q outside [0, 1]).
  [[nodiscard]] std::optional<value_type> quantile(double q) const {
    return snapshot().quantile(q);
  }
  [[nodiscard]] double relative_error() const noexcept { return prototype_.relative_error(); }

  /// Forgets every sample.
  void clear() noexcept {
    for (slot& s : slots_) {
      s.est.clear();
      s.k = never;
      s.late = 0;
    }
    newest_ = never;
    future_ = 0;
    current_start_ = 1;
    current_end_ = 0;
  }

  [[nodiscard]] duration window() const noexcept { return window_; }
  [[nodiscard]] duration slice_duration() const noexcept { return slice_; }
  [[nodiscard]] std::size_t slices() const noexcept { return slots_.size(); }
  [[nodiscard]] const Clock& clock() const noexcept { return clock_; }

 private:
  using rep = typename duration::rep;
  static constexpr std::int64_t never = std::numeric_limits<std::int64_t>::min();
  struct slot {
    Estimator est;
    std::int64_t k;      // slice number held, or never
    std::uint64_t late;  // samples that arrived after their slice left the window
  };

  // The slice of a time in the range (every tick count of a narrower type is): |ticks| < 2^62,
  // so the slice number, its start and its end (below 2^62 + one slice < 2^63) fit an int64.
  static std::int64_t slice_of_ticks(std::int64_t ticks, std::int64_t d) noexcept {
    std::int64_t q = ticks / d;
    if (ticks % d != 0 && ticks < 0) --q;  // floor
    return q;
  }
  // The slice of a query time, moved into the range first (an INT64_MIN clock with 1-tick
  // slices would otherwise give a slice number whose ring span overflows).
  std::int64_t slice_of(time_point t) const noexcept {
    return slice_of_ticks(
        static_cast<std::int64_t>(detail::clamp_to_time_range(t).time_since_epoch().count()),
        static_cast<std::int64_t>(slice_.count()));
  }
  // Where slice k starts, saturated to what the clock's tick type holds (only a narrower one
  // can fall short: its lowest tick count is not a multiple of every width).
  time_point slice_start(std::int64_t k) const noexcept {
    const std::int64_t ticks = static_cast<std::int64_t>(slice_.count()) * k;
    if constexpr (sizeof(rep) < sizeof(std::int64_t)) {
      if (ticks < static_cast<std::int64_t>(std::numeric_limits<rep>::min()))
        return time_point(duration(std::numeric_limits<rep>::min()));
      if (ticks > static_cast<std::int64_t>(std::numeric_limits<rep>::max()))
        return time_point(duration(std::numeric_limits<rep>::max()));
    }
    return time_point(duration(static_cast<rep>(ticks)));
  }
  std::size_t index_of(std::int64_t k) const noexcept {
    const auto n = static_cast<std::int64_t>(slots_.size());
    std::int64_t i = k % n;
    if (i < 0) i += n;
    return static_cast<std::size_t>(i);
  }
  template <class F>
  void for_each_live(time_point now, F&& f) const noexcept {
    const std::int64_t k_now = slice_of(now);
    const auto n = static_cast<std::int64_t>(slots_.size());
    for (const slot& s : slots_)
      if (s.k != never && s.k <= k_now && s.k > k_now - n) f(s);
  }

  TOKCHRON_NOINLINE bool add_slow(time_point t, value_type x) noexcept {
    const time_point now = clock_.now();
    const auto ticks = static_cast<std::int64_t>(t.time_since_epoch().count());
    // Ahead of the clock's slice, above the range, or a clock outside the range: future.
    if (!in_time_range(now) || (ticks > 0 && !in_time_range(t))) {
      ++future_;
      return false;
    }
    const std::int64_t k_now = slice_of(now);
    if (!in_time_range(t)) {  // below the range: older than any window
      ++claim(k_now).late;
      return false;
    }
    const std::int64_t k = slice_of(t);
    if (k > k_now) {
      ++future_;
      return false;
    }
    const auto n = static_cast<std::int64_t>(slots_.size());
    const std::int64_t newest = newest_ == never || newest_ < k_now ? k_now : newest_;
    if (k <= newest - n) {  // its slice is not live at now, or has left the ring
      ++claim(k_now).late;
      return false;
    }
    return claim(k).est.add(x);
  }
  /// The slot of slice k, cleared for it if it held an older slice; k becomes the newest slice
  /// when it is later than every slice recorded into.
  slot& claim(std::int64_t k) noexcept {
    slot& s = slots_[index_of(k)];
    if (s.k == never || s.k < k) {  // a stale slot (older than the window): reuse it
      s.est.clear();
      s.k = k;
      s.late = 0;
    }
    if (newest_ == never || k > newest_) {
      newest_ = k;
      current_ = index_of(k);
      current_start_ = static_cast<std::int64_t>(slice_.count()) * k;
      current_end_ = current_start_ + static_cast<std::int64_t>(slice_.count());
    }
    return s;
  }

  Clock clock_;
  Estimator prototype_;
  duration window_;
  duration slice_{};
  std::vector<slot> slots_;
  std::int64_t newest_ = never;     // the newest slice recorded into
  std::uint64_t future_ = 0;        // samples refused for being ahead of the clock
  std::size_t current_ = 0;         // its slot
  std::int64_t current_start_ = 1;  // its ticks [start, end); empty until the first add
  std::int64_t current_end_ = 0;
};

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_QUANTILE_WINDOWED_HPP
