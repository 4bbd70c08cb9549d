// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_QUANTILE_DETAIL_LOG_HISTOGRAM_IMPL_HPP
#define TOKCHRON_QUANTILE_DETAIL_LOG_HISTOGRAM_IMPL_HPP

/// \file
/// The bodies of `log_histogram`'s member functions (declared and documented in
/// `tokchron/quantile/log_histogram.hpp`, which includes this file): recording, merging,
/// downscaling and queries. Not part of the API.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "tokchron/quantile/log_histogram.hpp"

#if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#include <emmintrin.h>
#define TOKCHRON_HAS_SSE2 1
#else
#define TOKCHRON_HAS_SSE2 0
#endif

TOKCHRON_BEGIN_NAMESPACE

namespace detail {
/// Iterators over contiguous doubles that add(first, last) reads eight at a time: pointers to
/// double and std::vector<double>'s iterators.
template <class It>
inline constexpr bool contiguous_doubles_v =
    std::is_same_v<It, double*> || std::is_same_v<It, const double*> ||
    std::is_same_v<It, std::vector<double>::iterator> ||
    std::is_same_v<It, std::vector<double>::const_iterator>;
template <class It>
const double* to_address(It it) noexcept {
  if constexpr (std::is_pointer_v<It>)
    return it;
  else
    return &*it;  // only called with a dereferenceable iterator
}
}  // namespace detail

inline log_histogram log_histogram::with_mantissa_bits(int bits, double zero_threshold) {
  if (bits < 0 || bits > max_scale)
    TOKCHRON_THROW(std::invalid_argument, "tokchron: log_histogram mantissa bits must be 0..12");
  return log_histogram(scale_tag{}, bits, zero_threshold);
}

inline int log_histogram::scale_for(double relative_accuracy) {
  // relative_error_for(s) once per process (it costs an exp2 per scale).
  static const auto errors = [] {
    std::array<double, max_scale - min_scale + 1> e{};
    for (int s = min_scale; s <= max_scale; ++s)
      e[static_cast<std::size_t>(s - min_scale)] = relative_error_for(s);
    return e;
  }();
  for (int s = min_scale; s <= max_scale; ++s)
    if (errors[static_cast<std::size_t>(s - min_scale)] <= relative_accuracy &&
        relative_accuracy < 1.0)
      return s;
  TOKCHRON_THROW(std::invalid_argument,
                 "tokchron: log_histogram relative accuracy must be in [8.5e-5, 1)");
}

TOKCHRON_ALWAYS_INLINE bool log_histogram::add(double x) noexcept {
  // The fast path takes x when its bits lie in fast_: positive, normal, finite, above the
  // zero threshold, in a bucket inside the counters' window, with the exact samples full and
  // a scale >= 0 (sync_fast keeps fast_ so). Then the bucket needs no further check.
  const std::uint64_t b = detail::double_bits(x);
  if (TOKCHRON_LIKELY(b - fast_.lo < fast_.span)) {
    const std::uint64_t u = detail::cell_index(b, cells_, cell_shift_);
    if (TOKCHRON_LIKELY(pos_.increment_in_window(static_cast<std::uint32_t>(u) - pos_.first()))) {
      sums_[count_ & 1] += x;  // as record(x): two partial sums, so any path gives one sum
      ++count_;
      if (TOKCHRON_UNLIKELY(x < min_)) min_ = x;
      if (TOKCHRON_UNLIKELY(x > max_)) max_ = x;
      return true;
    }
  }
  return add_slow(x);
}

template <class It>
std::size_t log_histogram::add(It first, It last) noexcept(
    noexcept(static_cast<double>(*first)) && noexcept(++first) && noexcept(first != last)) {
  const std::uint64_t before = count_;
  while (first != last) {
    pos_.with_data([&](auto* counts) {
      if constexpr (detail::contiguous_doubles_v<It>) {
        // Eight samples at a time while every one of them takes the fast path.
        const double* p = detail::to_address(first);
        first += add_blocks(p, p + (last - first), counts) - p;
      }
      first = add_run(first, last, counts);
    });
    if (first == last) break;
    add(static_cast<double>(*first));  // the sample that left the fast path goes the full way
    ++first;
  }
  return static_cast<std::size_t>(count_ - before);
}

inline void log_histogram::merge(const log_histogram& other) {
  if (other.zero_threshold_ != zero_threshold_)
    TOKCHRON_THROW(std::invalid_argument,
                   "tokchron: log_histogram::merge needs equal zero thresholds");
  // Every bucket and the zero count are <= count (deserialize checks that they add up), so
  // checking the totals keeps every counter from wrapping.
  if (other.count_ > std::numeric_limits<std::uint64_t>::max() - count_ ||
      other.rejected_ > std::numeric_limits<std::uint64_t>::max() - rejected_)
    TOKCHRON_THROW(std::overflow_error,
                   "tokchron: log_histogram::merge would count more than 2^64 samples");
  if (other.scale_ > scale_) return merge(other.downscaled(scale_));
  if (other.scale_ < scale_) {
    log_histogram t = downscaled(other.scale_);
    t.merge(other);
    *this = std::move(t);
    return;
  }
  if (other.count_ == 0) {
    rejected_ += other.rejected_;
    return;
  }
  // Room for other's buckets at the present widths, then one adding pass each; only if a
  // counter would overflow are both undone and the widths the sums need found.
  reserve_for(pos_, other.pos_, pos_.width());
  reserve_for(neg_, other.neg_, neg_.width());
  const bool pos_fits = pos_.add_all_if_fits(other.pos_);
  const bool neg_fits = neg_.add_all_if_fits(other.neg_);
  if (!pos_fits || !neg_fits) {
    if (pos_fits) pos_.subtract_all(other.pos_);
    if (neg_fits) neg_.subtract_all(other.neg_);
    reserve_for(pos_, other.pos_, pos_.width_for_sum(other.pos_));
    reserve_for(neg_, other.neg_, neg_.width_for_sum(other.neg_));
    pos_.add_all_reserved(other.pos_);
    neg_.add_all_reserved(other.neg_);
  }
  if (count_ + other.count_ <= exact_capacity)
    std::copy(other.exact_.begin(),
              other.exact_.begin() + static_cast<std::ptrdiff_t>(other.count_),
              exact_.begin() + static_cast<std::ptrdiff_t>(count_));
  count_ += other.count_;
  rejected_ += other.rejected_;
  zero_count_ += other.zero_count_;
  sums_[0] += other.sum();
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  sync_fast();
}

inline log_histogram log_histogram::downscaled(int new_scale) const {
  if (new_scale > scale_ || new_scale < min_scale)
    TOKCHRON_THROW(std::invalid_argument,
                   "tokchron: log_histogram::downscaled needs min_scale <= new_scale <= scale()");
  log_histogram r(scale_tag{}, new_scale, zero_threshold_);
  r.copy_scalars(*this);
  const int shift = scale_ - new_scale;
  downscale_into(pos_, r.pos_, r, shift);
  downscale_into(neg_, r.neg_, r, shift);
  r.sync_fast();
  return r;
}

inline void log_histogram::clear() noexcept {
  pos_.clear();
  neg_.clear();
  count_ = rejected_ = zero_count_ = 0;
  sums_[0] = sums_[1] = 0;
  min_ = std::numeric_limits<double>::infinity();
  max_ = -std::numeric_limits<double>::infinity();
  sync_fast();
}

inline std::optional<double> log_histogram::quantile(double q, quantile_method method) const {
  detail::check_probability(q);
  if (count_ == 0) return std::nullopt;
  if (is_exact()) {
    std::array<double, exact_capacity> s{};
    std::copy(exact_.begin(), exact_.begin() + static_cast<std::ptrdiff_t>(count_), s.begin());
    std::sort(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(count_));
    return detail::sorted_quantile(s.begin(), static_cast<std::size_t>(count_), q, method);
  }
  return detail::sorted_quantile(rank_reader{this}, static_cast<std::size_t>(count_), q, method);
}

inline std::uint64_t log_histogram::rank(double x) const noexcept {
  if (count_ == 0 || std::isnan(x) || x < min_) return 0;
  if (x >= max_) return count_;
  if (is_exact()) {
    std::uint64_t r = 0;
    for (std::uint64_t i = 0; i < count_; ++i) r += exact_[i] <= x ? 1 : 0;
    return r;
  }
  const std::uint64_t neg_total = neg_.total();
  if (x < -zero_threshold_) {  // samples in buckets of |v| >= x's bucket
    const std::uint32_t u = biased_index(-x);
    std::uint64_t r = 0;
    for (std::uint32_t p = 0; p < neg_.size(); ++p)
      if (neg_.first() + p >= u) r += neg_.get(p);
    return r;
  }
  if (x <= zero_threshold_) return neg_total + zero_count_;
  const std::uint32_t u = biased_index(x);
  std::uint64_t r = neg_total + zero_count_;
  for (std::uint32_t p = 0; p < pos_.size() && pos_.first() + p <= u; ++p) r += pos_.get(p);
  return r;
}

inline double log_histogram::bucket_lower(std::int32_t index) const noexcept {
  if (scale_ <= 0) return std::ldexp(1.0, index * (1 << sn_));
  const std::int32_t n = 1 << scale_;
  const std::int32_t q = floor_div(index, scale_);
  return std::ldexp(bounds_[static_cast<std::size_t>(index - q * n)], q);
}

inline log_histogram::log_histogram(scale_tag, int scale, double zero_threshold) {
  if (scale < min_scale || scale > max_scale)
    TOKCHRON_THROW(std::invalid_argument, "tokchron: log_histogram scale must be -10..12");
  if (!(zero_threshold >= 0) || !std::isfinite(zero_threshold))
    TOKCHRON_THROW(std::invalid_argument,
                   "tokchron: log_histogram zero threshold must be finite and >= 0");
  scale_ = static_cast<std::int8_t>(scale);
  sp_ = static_cast<std::uint8_t>(scale > 0 ? scale : 0);
  sn_ = static_cast<std::uint8_t>(scale < 0 ? -scale : 0);
  cell_shift_ = static_cast<std::uint8_t>(51 - sp_);
  const detail::log_index_table& t = detail::log_index_table_for(sp_);
  cells_ = t.cells.data();
  bounds_ = t.bounds.data();
  thresholds_ = t.thresholds.data();
  bias_ = static_cast<std::int32_t>((std::int64_t{2048} << sp_) >> sn_);
  zero_threshold_ = zero_threshold;
  const double lo =
      std::max(std::numeric_limits<double>::min(),
               std::nextafter(zero_threshold, std::numeric_limits<double>::infinity()));
  fast_floor_ = detail::double_bits(lo);
  const double inv_base = std::exp2(-std::ldexp(1.0, -scale));
  rep_factor_ = 2.0 / (1.0 + inv_base);
}

inline void log_histogram::record(double x) noexcept {
  if (count_ < exact_capacity) exact_[static_cast<std::size_t>(count_)] = x;
  sums_[count_ & 1] += x;  // two interleaved partial sums halve the add's dependency chain
  ++count_;
  // Branches, not minsd/maxsd: once the extremes settle the branches are predicted and
  // min_/max_ leave the loop-carried dependency chain.
  if (TOKCHRON_UNLIKELY(x < min_)) min_ = x;
  if (TOKCHRON_UNLIKELY(x > max_)) max_ = x;
}

TOKCHRON_NOINLINE inline bool log_histogram::add_slow(double x) noexcept {
  if (!std::isfinite(x)) return reject();
  const double a = std::fabs(x);
  if (a <= zero_threshold_) {
    ++zero_count_;
    record(x);
    if (count_ == exact_capacity) sync_fast();
    return true;
  }
  detail::bucket_counts& s = x < 0 ? neg_ : pos_;
  const std::uint32_t window = pos_.size();
  if (!s.increment(biased_index(a))) return reject();
  record(x);
  if (count_ == exact_capacity || pos_.size() != window) sync_fast();
  return true;
}

// Why intrinsics: the batch used to be one scalar loop, and GCC 12 -O3 compiled it differently
// depending on the calling file; in some it packed min and max into one SSE register and
// shuffled it every sample, so the batch ran 1.5x slower than add(x) there. Here the only
// vector work is spelt out (two samples per register: the window compare and min/max), the
// scalar part holds no floating-point compare the compiler could pack, and the outcome is the
// same in every file, with or without -march=native (bench/batch_tu_*_bench.cpp measure it).
template <class T>
const double* log_histogram::add_blocks(const double* first, const double* last,
                                        T* counts) noexcept {
#if TOKCHRON_HAS_SSE2
  if (fast_.span == 0) return first;
  // The fast window's bits as doubles: positive values order as their bits, and a NaN, an
  // infinity, a negative value or zero fails one of the two ordered compares.
  const __m128d lo = _mm_set1_pd(detail::bits_double(fast_.lo));
  const __m128d hi = _mm_set1_pd(detail::bits_double(fast_.lo + fast_.span - 1));
  const unsigned shift = cell_shift_;
  const detail::log_index_cell* const cells = cells_;
  const std::uint32_t window = pos_.first();
  const std::uint64_t mantissa = (std::uint64_t{1} << 52) - 1;
  double cur = sums_[count_ & 1];
  double other = sums_[(count_ + 1) & 1];
  __m128d mn = _mm_set1_pd(min_);
  __m128d mx = _mm_set1_pd(max_);
  const double* p = first;
  for (; last - p >= 8; p += 8) {
    const __m128d a0 = _mm_loadu_pd(p), a1 = _mm_loadu_pd(p + 2);
    const __m128d a2 = _mm_loadu_pd(p + 4), a3 = _mm_loadu_pd(p + 6);
    const __m128d in01 = _mm_and_pd(_mm_and_pd(_mm_cmpge_pd(a0, lo), _mm_cmple_pd(a0, hi)),
                                    _mm_and_pd(_mm_cmpge_pd(a1, lo), _mm_cmple_pd(a1, hi)));
    const __m128d in23 = _mm_and_pd(_mm_and_pd(_mm_cmpge_pd(a2, lo), _mm_cmple_pd(a2, hi)),
                                    _mm_and_pd(_mm_cmpge_pd(a3, lo), _mm_cmple_pd(a3, hi)));
    if (TOKCHRON_UNLIKELY(_mm_movemask_pd(_mm_and_pd(in01, in23)) != 3)) break;
    // The counters, in order; a full one (widening needed) undoes the block's increments and
    // leaves the block to the one-at-a-time path.
    int j = 0;
    T* k[8];
    for (; j < 8; ++j) {
      const std::uint64_t b = detail::double_bits(p[j]);
      const std::uint64_t m = b & mantissa;
      const detail::log_index_cell& c = cells[m >> shift];
      const std::uint64_t u = (b >> shift >> 1) + static_cast<std::uint64_t>(c.base) + (m > c.next);
      k[j] = counts + (static_cast<std::uint32_t>(u) - window);
      const T v = static_cast<T>(*k[j] + 1u);
      if (TOKCHRON_UNLIKELY(v == 0)) break;
      *k[j] = v;
    }
    if (TOKCHRON_UNLIKELY(j != 8)) {
      while (j-- > 0) *k[j] = static_cast<T>(*k[j] - 1u);
      break;
    }
    cur += p[0];
    other += p[1];
    cur += p[2];
    other += p[3];
    cur += p[4];
    other += p[5];
    cur += p[6];
    other += p[7];
    mn = _mm_min_pd(_mm_min_pd(_mm_min_pd(a0, a1), _mm_min_pd(a2, a3)), mn);
    mx = _mm_max_pd(_mm_max_pd(_mm_max_pd(a0, a1), _mm_max_pd(a2, a3)), mx);
  }
  count_ += static_cast<std::uint64_t>(p - first);  // a multiple of 8: the parity stays
  sums_[count_ & 1] = cur;
  sums_[(count_ + 1) & 1] = other;
  min_ = _mm_cvtsd_f64(_mm_min_sd(mn, _mm_unpackhi_pd(mn, mn)));
  max_ = _mm_cvtsd_f64(_mm_max_sd(mx, _mm_unpackhi_pd(mx, mx)));
  return p;
#else
  (void)last;
  (void)counts;
  return first;
#endif
}

template <class T, class It>
It log_histogram::add_run(It first, It last, T* counts) noexcept(
    noexcept(static_cast<double>(*first)) && noexcept(++first) && noexcept(first != last)) {
  const std::uint64_t lo = fast_.lo;
  const std::uint64_t span = fast_.span;
  const unsigned shift = cell_shift_;
  const std::uint64_t mantissa = (std::uint64_t{1} << 52) - 1;
  const detail::log_index_cell* const cells = cells_;
  const std::uint32_t window = pos_.first();
  // The two partial sums of record(x): `cur` takes the next sample, then they trade places.
  double cur = sums_[count_ & 1];
  double other = sums_[(count_ + 1) & 1];
  // Every sample here is positive and finite, so its bits order as the values do: min and
  // max as integer compares (0 stands for a min_ or max_ <= 0: no sample passes it for the
  // min, every sample passes it for the max).
  const std::uint64_t mn0 = min_ > 0 ? detail::double_bits(min_) : 0;
  const std::uint64_t mx0 = max_ > 0 ? detail::double_bits(max_) : 0;
  std::uint64_t mn = mn0, mx = mx0;
  // One sample: false (nothing changed) when it must take the full path.
  auto take = [&](double x) noexcept {
    const std::uint64_t b = detail::double_bits(x);
    if (TOKCHRON_UNLIKELY(b - lo >= span)) return false;
    const std::uint64_t m = b & mantissa;
    const detail::log_index_cell& c = cells[m >> shift];
    const std::uint64_t u = (b >> shift >> 1) + static_cast<std::uint64_t>(c.base) + (m > c.next);
    T& k = counts[static_cast<std::uint32_t>(u) - window];
    const T v = static_cast<T>(k + 1u);
    if (TOKCHRON_UNLIKELY(v == 0)) return false;  // the counter is full: widen first
    k = v;
    cur += x;
    std::swap(cur, other);
    if (TOKCHRON_UNLIKELY(b < mn)) mn = b;
    if (TOKCHRON_UNLIKELY(b > mx)) mx = b;
    return true;
  };
  std::uint64_t n = 0;
  if constexpr (std::is_base_of_v<std::random_access_iterator_tag,
                                  typename std::iterator_traits<It>::iterator_category>) {
    const It start = first;  // one induction variable: the count is the distance
    while (first != last && take(static_cast<double>(*first))) ++first;
    n = static_cast<std::uint64_t>(first - start);
  } else {
    for (; first != last && take(static_cast<double>(*first)); ++first) ++n;
  }
  count_ += n;
  sums_[count_ & 1] = cur;
  sums_[(count_ + 1) & 1] = other;
  if (mn != mn0) min_ = detail::bits_double(mn);
  if (mx != mx0) max_ = detail::bits_double(mx);
  return first;
}

inline void log_histogram::sync_fast() noexcept {
  fast_ = detail::fast_window{};
  if (scale_ < 0 || count_ < exact_capacity || pos_.size() == 0) return;
  constexpr std::uint64_t normal_min = std::uint64_t{1} << 52;           // DBL_MIN
  constexpr std::uint64_t finite_max = (std::uint64_t{2047} << 52) - 1;  // DBL_MAX
  const std::uint64_t lo = std::max({lowest_bits(pos_.first()), normal_min, fast_floor_});
  const std::uint64_t hi = std::min(lowest_bits(pos_.first() + pos_.size()) - 1, finite_max);
  if (lo <= hi) fast_ = detail::fast_window{lo, hi - lo + 1};
}

inline std::uint64_t log_histogram::lowest_bits(std::uint32_t u) const noexcept {
  const std::int64_t e = (static_cast<std::int64_t>(u) >> sp_) - 1025;
  if (e < 0) return 0;
  if (e > 2046) return std::uint64_t{2047} << 52;
  const std::uint32_t k = u & ((std::uint32_t{1} << sp_) - 1);
  return (static_cast<std::uint64_t>(e) << 52) | (thresholds_[k] + 1);
}

inline std::uint32_t log_histogram::biased_index(double a) const noexcept {
  std::uint64_t b = detail::double_bits(a);
  std::int64_t adjust = 0;
  if (b < (std::uint64_t{1} << 52)) {  // subnormal: scale into the normal range, exactly
    b = detail::double_bits(a * 0x1p64);
    adjust = std::int64_t{64} << sp_;
  }
  const std::int64_t pre =
      static_cast<std::int64_t>(detail::cell_index(b, cells_, cell_shift_)) - adjust;
  return static_cast<std::uint32_t>(pre >> sn_);
}

inline bool log_histogram::extremes_consistent() const noexcept {
  using key = std::pair<int, std::int64_t>;  // (negative 0 / zero 1 / positive 2, order)
  auto key_of = [&](double v) -> key {
    if (std::fabs(v) <= zero_threshold_) return {1, 0};
    if (v < 0) return {0, -static_cast<std::int64_t>(biased_index(-v))};
    return {2, biased_index(v)};
  };
  const bool has_neg = neg_.next_nonzero(0) != neg_.size();
  const bool has_pos = pos_.next_nonzero(0) != pos_.size();
  const key neg_low{0, -static_cast<std::int64_t>(neg_.first() + neg_.prev_nonzero(neg_.size()))};
  const key neg_high{0, -static_cast<std::int64_t>(neg_.first() + neg_.next_nonzero(0))};
  const key pos_low{2, pos_.first() + pos_.next_nonzero(0)};
  const key pos_high{2, pos_.first() + pos_.prev_nonzero(pos_.size())};
  const key zero{1, 0};
  const key lowest = has_neg ? neg_low : zero_count_ != 0 ? zero : pos_low;
  const key highest = has_pos ? pos_high : zero_count_ != 0 ? zero : neg_high;
  if (!has_neg && !has_pos && zero_count_ == 0) return false;
  return key_of(min_) == lowest && key_of(max_) == highest;
}

inline log_histogram::rank_span log_histogram::span_at_rank(std::uint64_t k) const noexcept {
  const auto value = [&](const detail::bucket_counts& s, std::uint32_t p, bool negative) {
    const double v = bucket_value(static_cast<std::int32_t>(s.first() + p) - bias_);
    return clamp(negative ? -v : v);
  };
  std::uint64_t seen = 0;
  if (k < count_ - k) {
    std::uint32_t p = neg_.locate(k, seen, true);
    if (p != neg_.size()) return {seen - neg_.get(p), seen, value(neg_, p, true)};
    if (k < seen + zero_count_) return {seen, seen + zero_count_, clamp(0.0)};
    seen += zero_count_;
    p = pos_.locate(k, seen, false);
    if (p != pos_.size()) return {seen - pos_.get(p), seen, value(pos_, p, false)};
    return {k, k + 1, max_};  // unreachable: the counts add up to count_
  }
  const std::uint64_t r = count_ - 1 - k;        // its rank from the top; a top span [a, b) is
  std::uint32_t p = pos_.locate(r, seen, true);  // the bottom span [count - b, count - a)
  if (p != pos_.size()) return {count_ - seen, count_ - seen + pos_.get(p), value(pos_, p, false)};
  if (r < seen + zero_count_) return {count_ - seen - zero_count_, count_ - seen, clamp(0.0)};
  seen += zero_count_;
  p = neg_.locate(r, seen, false);
  if (p != neg_.size()) return {count_ - seen, count_ - seen + neg_.get(p), value(neg_, p, true)};
  return {k, k + 1, min_};  // unreachable: the counts add up to count_
}

inline void log_histogram::reserve_for(detail::bucket_counts& mine,
                                       const detail::bucket_counts& theirs, unsigned width) {
  const std::uint32_t lo = theirs.next_nonzero(0);
  if (lo == theirs.size()) return;
  const std::uint32_t hi = theirs.prev_nonzero(theirs.size());
  if (!mine.reserve(theirs.first() + lo, theirs.first() + hi, width)) detail::throw_bad_alloc();
}

inline void log_histogram::copy_scalars(const log_histogram& o) noexcept {
  count_ = o.count_;
  rejected_ = o.rejected_;
  zero_count_ = o.zero_count_;
  sums_[0] = o.sums_[0];
  sums_[1] = o.sums_[1];
  min_ = o.min_;
  max_ = o.max_;
  exact_ = o.exact_;
}

inline void log_histogram::downscale_into(const detail::bucket_counts& from,
                                          detail::bucket_counts& to, const log_histogram& r,
                                          int shift) const {
  const std::uint32_t lo = from.next_nonzero(0);
  if (lo == from.size()) return;
  const std::uint32_t hi = from.prev_nonzero(from.size());
  auto map = [&](std::uint32_t p) {
    const std::int32_t i = static_cast<std::int32_t>(from.first() + p) - bias_;
    return static_cast<std::uint32_t>(floor_div(i, shift) + r.bias_);
  };
  if (!to.reserve(map(lo), map(hi), from.width())) detail::throw_bad_alloc();
  for (std::uint32_t p = lo; p <= hi; ++p)
    if (!to.add(map(p), from.get(p))) detail::throw_bad_alloc();
}

inline bool log_histogram::same_counts(const detail::bucket_counts& a,
                                       const detail::bucket_counts& b) noexcept {
  const std::uint32_t lo = std::min(a.first(), b.first());
  const std::uint32_t hi = std::max(a.first() + a.size(), b.first() + b.size());
  for (std::uint32_t u = lo; u < hi; ++u)
    if (a.at(u) != b.at(u)) return false;
  return true;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_QUANTILE_DETAIL_LOG_HISTOGRAM_IMPL_HPP
