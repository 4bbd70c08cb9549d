// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_QUANTILE_LOG_HISTOGRAM_HPP
#define TOKCHRON_QUANTILE_LOG_HISTOGRAM_HPP

/// \file
/// `log_histogram`: the default estimator. Relative-error buckets laid out exactly as an
/// OpenTelemetry exponential histogram (scale s) / Prometheus native histogram (schema s), so
/// it exports to both without loss; mergeable without loss; exact for small counts.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/quantile/detail/log_index.hpp"
#include "tokchron/quantile/estimator.hpp"
#include "tokchron/quantile/exact.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// Why `log_histogram::deserialize` refused its bytes.
enum class decode_error : std::uint8_t {
  none,                 ///< success
  truncated,            ///< the bytes end inside a field
  bad_magic,            ///< not a log_histogram ("TKLH")
  unsupported_version,  ///< written by a newer format version
  invalid_field,        ///< a field holds an impossible value (scale, width, NaN, ...)
  inconsistent,         ///< fields disagree (counts do not add up, min outside its bucket, ...)
  checksum_mismatch,    ///< the CRC-32 does not match the bytes
  trailing_bytes,       ///< bytes left after the checksum
  out_of_memory,        ///< the buckets could not be allocated
};

/// The error's name, as messages spell it.
[[nodiscard]] constexpr std::string_view to_string(decode_error e) noexcept {
  switch (e) {
    case decode_error::none: return "none";
    case decode_error::truncated: return "truncated";
    case decode_error::bad_magic: return "bad_magic";
    case decode_error::unsupported_version: return "unsupported_version";
    case decode_error::invalid_field: return "invalid_field";
    case decode_error::inconsistent: return "inconsistent";
    case decode_error::checksum_mismatch: return "checksum_mismatch";
    case decode_error::trailing_bytes: return "trailing_bytes";
    case decode_error::out_of_memory: return "out_of_memory";
  }
  return "unknown";
}

class log_histogram;

/// The outcome of `log_histogram::deserialize`: the histogram, or why there is none, naming
/// the byte offset and the field.
struct log_histogram_decoded;

/// A relative-error histogram over doubles (seconds, usually), mergeable and exportable.
///
/// **Buckets.** At scale s, base = 2^(2^-s); positive bucket i holds (base^i, base^(i+1)]
/// (OpenTelemetry's convention; Prometheus native schema s for s in -4..8), negative values use
/// the same layout on |x|, and |x| <= `zero_threshold()` goes to the zero bucket. The index is
/// computed from the IEEE-754 bits with one table look-up and one comparison (no `log`); it is
/// exact, including at the boundaries (powers of the base).
///
/// **Error bound.** For every q and every `quantile_method`, `quantile(q, m)` is within
/// `relative_error()` = (base - 1)/(base + 1) (plus 1e-15 for rounding) of the exact sample
/// quantile `exact_quantiles::quantile(q, m)` of the same samples, relative to that value,
/// provided the samples have one sign and |x| >= DBL_MIN (`linear` interpolates between two
/// order statistics, each within the bound, so the blend is too). Values in the zero bucket
/// are answered as 0 (absolute error <= zero_threshold()). Each bucket answers with
/// 2 L U / (L + U), the point whose relative distance to both edges is (base - 1)/(base + 1);
/// answers are clamped to [min, max], and rank 0 and n - 1 answer min and max exactly. While
/// `count() <= exact_capacity` the samples are kept and every answer is exact.
/// alpha = 1 % gives scale 6 (base 2^(1/64), bound 0.54 %).
///
/// **Cost.** `add`: O(1), no allocation unless a value falls outside the bucket window seen so
/// far (about 1-2 ns). Memory grows with the range of values, not the count: 2^s buckets per
/// octave of range seen, 2 bytes each while every bucket holds < 65536 samples, then 4 (then
/// 8); 1 us..1 h at 1 % is 2032 buckets (4 KiB, 8 KiB with 32-bit counters). A quantile walks
/// the buckets from the nearer end (from the top for q above the median), eight counters per
/// step, and reads the second order statistic of an interpolation from the same bucket: its
/// cost depends on how many buckets lie beyond the answer, never on the count, so a tail
/// quantile is the cheapest. `merge` adds counters in one pass per sign. count, sum, min and
/// max are exact; NaN and infinities are rejected and counted in `rejected()`.
///
/// Thread safety: one writer; concurrent readers only while nobody writes (collect/ merges
/// per-thread histograms for the many-thread view).
class log_histogram {
 public:
  using value_type = double;
  /// Coarsest and finest scale: base 2^1024 and 2^(1/4096).
  static constexpr int min_scale = detail::log_min_scale;
  static constexpr int max_scale = detail::log_max_scale;
  /// Samples kept exactly: every answer is exact while count() <= exact_capacity.
  static constexpr std::uint64_t exact_capacity = 32;
  /// The format version `serialize` writes and `deserialize` reads.
  static constexpr std::uint8_t format_version = 1;

  /// A non-empty bucket: its index (OTel/Prometheus numbering) and count.
  struct bucket {
    std::int32_t index;
    std::uint64_t count;
  };
  class bucket_range;

  /// A histogram whose quantiles are within `relative_accuracy` (alpha, in (0, 1), default
  /// 1 %): the coarsest scale with (base - 1)/(base + 1) <= alpha. |x| <= `zero_threshold`
  /// (>= 0, finite) counts as zero. Throws std::invalid_argument for alpha outside
  /// [relative_error_for(max_scale), 1) or a bad threshold.
  explicit log_histogram(double relative_accuracy = 0.01, double zero_threshold = 0.0)
      : log_histogram(scale_tag{}, scale_for(relative_accuracy), zero_threshold) {}

  /// A histogram at OTel scale `scale` (min_scale..max_scale; throws std::invalid_argument).
  [[nodiscard]] static log_histogram with_scale(int scale, double zero_threshold = 0.0) {
    return log_histogram(scale_tag{}, scale, zero_threshold);
  }
  /// A histogram with `bits` mantissa bits of precision (2^bits buckets per octave, 0..12):
  /// the same as scale `bits`.
  [[nodiscard]] static log_histogram with_mantissa_bits(int bits, double zero_threshold = 0.0);
  /// The coarsest scale whose error bound is <= `relative_accuracy` (throws
  /// std::invalid_argument outside [relative_error_for(max_scale), 1)).
  [[nodiscard]] static int scale_for(double relative_accuracy);
  /// (base - 1)/(base + 1) at `scale`, plus 1e-15 for the representative's rounding.
  [[nodiscard]] static double relative_error_for(int scale) noexcept {
    const double inv_base = std::exp2(-std::ldexp(1.0, -scale));  // 1/base, 0 at scale -10
    return (1.0 - inv_base) / (1.0 + inv_base) + 1e-15;
  }

  /// Records `x`. Zero and negative values are kept (see the class comment); NaN and
  /// infinities are rejected (false) and counted, as is a value whose bucket memory could not
  /// be allocated (nothing else changes then). O(1), noexcept.
  TOKCHRON_ALWAYS_INLINE bool add(double x) noexcept;

  /// Records every sample of [first, last) (a forward range of values convertible to double)
  /// exactly as that many `add(x)` calls would, bit for bit (sum included), but with the
  /// histogram's hot state held in registers across the batch: the cheapest way to record
  /// several samples at once (a finished request's ITL samples, a per-thread buffer). Pointers
  /// to double and std::vector<double> iterators go eight samples at a time (the window check
  /// and min/max in SSE2 registers on x86-64, written with intrinsics so that the calling
  /// file's flags cannot change how it is compiled). Returns how many samples were taken (the
  /// rest were rejected and counted).
  template <class It>
  std::size_t add(It first, It last) noexcept(
      noexcept(static_cast<double>(*first)) && noexcept(++first) && noexcept(first != last));

  /// Adds every sample of `other`. Same scale: lossless (bucket counts add). A finer `other` is
  /// first downscaled to this scale; a coarser one downscales this histogram to its scale. The
  /// zero thresholds must be equal (std::invalid_argument). A merge whose sample or rejected
  /// count would pass 2^64 (possible only with deserialised bytes) throws std::overflow_error.
  /// Strong guarantee: on any exception nothing changes. O(buckets).
  void merge(const log_histogram& other);

  /// A copy at the coarser scale `new_scale` (<= scale(), >= min_scale; std::invalid_argument
  /// otherwise): bucket i becomes bucket floor(i / 2^(scale() - new_scale)), counts add, so
  /// no sample is lost; the error bound becomes that of `new_scale`. O(buckets).
  [[nodiscard]] log_histogram downscaled(int new_scale) const;

  /// Forgets every sample and the rejected count; keeps the scale, threshold and memory (so a
  /// reused slice does not allocate).
  void clear() noexcept;

  [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
  [[nodiscard]] std::uint64_t rejected() const noexcept { return rejected_; }
  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
  /// True while every sample is kept (count() <= exact_capacity): answers are exact.
  [[nodiscard]] bool is_exact() const noexcept { return count_ <= exact_capacity; }
  /// Sum of samples (accumulated as two interleaved partial sums, then merged ones).
  [[nodiscard]] double sum() const noexcept { return sums_[0] + sums_[1]; }
  [[nodiscard]] std::optional<double> mean() const noexcept {
    if (count_ == 0) return std::nullopt;
    return sum() / static_cast<double>(count_);
  }
  [[nodiscard]] std::optional<double> min() const noexcept {
    return detail::when_sampled(count_, min_);
  }
  [[nodiscard]] std::optional<double> max() const noexcept {
    return detail::when_sampled(count_, max_);
  }

  /// The q-quantile (q in [0, 1], std::invalid_argument otherwise) by numpy's linear method,
  /// within relative_error() of the exact one (class comment); empty when there are no samples.
  [[nodiscard]] std::optional<double> quantile(double q) const {
    return quantile(q, quantile_method::linear);
  }
  /// The q-quantile by `method`, within relative_error() of `exact_quantiles::quantile(q, method)`.
  [[nodiscard]] std::optional<double> quantile(double q, quantile_method method) const;

  /// The number of samples <= x: exact while is_exact() and outside [min, max]; otherwise every
  /// sample in x's bucket counts, so for x > zero_threshold() it is the exact number of samples
  /// <= bucket_upper(index_of(x)). 0 for NaN. O(buckets).
  [[nodiscard]] std::uint64_t rank(double x) const noexcept;
  /// rank(x) / count(); empty when there are no samples.
  [[nodiscard]] std::optional<double> cdf(double x) const noexcept {
    if (count_ == 0) return std::nullopt;
    return static_cast<double>(rank(x)) / static_cast<double>(count_);
  }

  /// The guaranteed relative value error of `quantile` (class comment).
  [[nodiscard]] double relative_error() const noexcept { return relative_error_for(scale_); }

  // --- the layout, for exporters (OpenTelemetry exponential histogram, Prometheus native) ---

  /// The OpenTelemetry scale (= Prometheus native-histogram schema for -4..8).
  [[nodiscard]] int scale() const noexcept { return scale_; }
  /// base = 2^(2^-scale): each bucket's upper edge over its lower edge.
  [[nodiscard]] double base() const noexcept { return std::exp2(std::ldexp(1.0, -scale_)); }
  /// |x| <= zero_threshold() is counted in the zero bucket.
  [[nodiscard]] double zero_threshold() const noexcept { return zero_threshold_; }
  [[nodiscard]] std::uint64_t zero_count() const noexcept { return zero_count_; }
  /// The non-empty buckets of positive (or of the absolute value of negative) samples, in
  /// ascending index order, as `bucket{index, count}`.
  [[nodiscard]] bucket_range positive_buckets() const noexcept;
  [[nodiscard]] bucket_range negative_buckets() const noexcept;
  /// The index of the bucket holding |x| (x finite and |x| > 0; otherwise 0). Exact.
  [[nodiscard]] std::int32_t index_of(double x) const noexcept {
    const double a = std::fabs(x);
    if (!(a > 0) || !std::isfinite(a)) return 0;
    return static_cast<std::int32_t>(biased_index(a)) - bias_;
  }
  /// base^index: the exclusive lower edge of bucket `index` (the double nearest; exact at
  /// scale <= 0 and at powers of two).
  [[nodiscard]] double bucket_lower(std::int32_t index) const noexcept;
  /// base^(index + 1): the inclusive upper edge of bucket `index`.
  [[nodiscard]] double bucket_upper(std::int32_t index) const noexcept {
    return bucket_lower(index + 1);
  }
  /// The value a bucket answers with: 2 L U / (L + U).
  [[nodiscard]] double bucket_value(std::int32_t index) const noexcept {
    return bucket_lower(index) * rep_factor_;
  }

  /// Bytes this histogram holds: the object and its bucket counters.
  [[nodiscard]] std::size_t memory_bytes() const noexcept {
    return sizeof(*this) + pos_.memory_bytes() + neg_.memory_bytes();
  }

  // --- serialisation ---

  /// The bytes `serialize` writes (little-endian, versioned, CRC-32 protected):
  /// "TKLH", u8 version, i8 scale, u8 flags (bit 0: exact samples follow), u8 0;
  /// f64 zero_threshold, u64 count, u64 rejected, f64 sum, f64 min, f64 max, u64 zero_count;
  /// if flagged, count x f64 samples; then positive and negative buckets, each i32 first
  /// index, u32 n, u8 counter width (1, 2, 4, 8), n counters; u32 CRC-32 of all before it.
  [[nodiscard]] std::size_t serialized_size() const noexcept;
  /// Writes serialized_size() bytes to `out` if `capacity` suffices; returns the size needed.
  std::size_t serialize_to(unsigned char* out, std::size_t capacity) const noexcept;
  /// The serialised bytes (throws std::bad_alloc only).
  [[nodiscard]] std::vector<unsigned char> serialize() const {
    std::vector<unsigned char> v(serialized_size());
    serialize_to(v.data(), v.size());
    return v;
  }
  /// Reads bytes written by `serialize`. Never throws and never reads outside [data, data +
  /// size); every field is validated (ranges, counts adding up, min/max in their buckets, the
  /// checksum), and a refusal names the byte offset and the field. Fuzzing entry point.
  [[nodiscard]] static log_histogram_decoded deserialize(const void* data,
                                                         std::size_t size) noexcept;

  /// Same recorded state: scale, threshold, every count, sum, min, max (and exact samples).
  friend bool operator==(const log_histogram& a, const log_histogram& b) noexcept {
    if (a.scale_ != b.scale_ || a.zero_threshold_ != b.zero_threshold_ || a.count_ != b.count_ ||
        a.rejected_ != b.rejected_ || a.zero_count_ != b.zero_count_ || a.sum() != b.sum())
      return false;
    if (a.count_ != 0 && (a.min_ != b.min_ || a.max_ != b.max_)) return false;
    if (a.is_exact() &&
        !std::equal(a.exact_.begin(), a.exact_.begin() + static_cast<std::ptrdiff_t>(a.count_),
                    b.exact_.begin()))
      return false;
    return same_counts(a.pos_, b.pos_) && same_counts(a.neg_, b.neg_);
  }
  friend bool operator!=(const log_histogram& a, const log_histogram& b) noexcept {
    return !(a == b);
  }

 private:
  friend struct log_histogram_decoded;
  struct scale_tag {};
  struct wire;  // the serialised form's decode steps (detail/log_histogram_wire.hpp)

  log_histogram(scale_tag, int scale, double zero_threshold);

  /// The ranks [lo, hi) that one bucket (or the zero bucket) answers, and its answer.
  struct rank_span {
    std::uint64_t lo = 0;
    std::uint64_t hi = 0;
    double value = 0;
  };
  /// The sorted samples as `sorted_quantile` reads them (non-exact mode). It remembers the
  /// last bucket it found, so the second order statistic of an interpolation (nearly always
  /// in the same bucket) costs nothing.
  struct rank_reader {
    const log_histogram* h;
    mutable rank_span last{};
    double operator[](std::ptrdiff_t i) const noexcept {
      const auto k = static_cast<std::uint64_t>(i);
      if (k == 0) return h->min_;
      if (k + 1 >= h->count_) return h->max_;
      if (k < last.lo || k >= last.hi) last = h->span_at_rank(k);
      return last.value;
    }
  };

  static std::int32_t floor_div(std::int32_t i, int shift) noexcept {
    return i >= 0 ? (i >> shift) : -((-i - 1) >> shift) - 1;
  }

  bool reject() noexcept {
    ++rejected_;
    return false;
  }
  void record(double x) noexcept;
  bool add_slow(double x) noexcept;  // out of line (TOKCHRON_NOINLINE at its definition)
  /// add(first, last)'s first stage over contiguous doubles: blocks of eight whose samples all
  /// lie in the fast window, checked, and their min and max taken, two at a time in SSE2
  /// registers (x86-64; elsewhere it takes none); returns where it stopped.
  template <class T>
  const double* add_blocks(const double* first, const double* last, T* counts) noexcept;
  /// add(x)'s fast path over [first, last) with the hot state in locals; stops at the first
  /// sample the fast path does not take (or whose counter is full) and returns its position.
  template <class T, class It>
  It add_run(It first, It last, T* counts) noexcept(
      noexcept(static_cast<double>(*first)) && noexcept(++first) && noexcept(first != last));
  /// Sets fast_ to the bits of the values add may count without further checks: positive
  /// normal finite values above the zero threshold whose bucket lies in the positive window,
  /// and none while the samples are kept exactly or the scale is negative (its index needs a
  /// second shift). Called wherever the window, the count or the layout changes.
  void sync_fast() noexcept;
  /// The bits of the smallest double in biased bucket `u` (scale >= 0), clamped to
  /// [0, bits of infinity]: bucket k of octave E holds the mantissas (T_k, T_(k+1)].
  std::uint64_t lowest_bits(std::uint32_t u) const noexcept;
  /// The biased bucket index of a > 0, finite (subnormals included).
  std::uint32_t biased_index(double a) const noexcept;

  /// min and max lie in the lowest and the highest occupied bucket (the deserialiser's check).
  bool extremes_consistent() const noexcept;
  double clamp(double v) const noexcept { return v < min_ ? min_ : (v > max_ ? max_ : v); }
  /// The bucket answering the k-th smallest sample (0-based, 0 < k < count - 1), non-exact
  /// mode, found from the nearer end: from the bottom (negative buckets by descending
  /// magnitude, zero, positive ascending) when k is in the lower half, else from the top (the
  /// mirror walk), so a tail quantile reads only the buckets beyond it.
  rank_span span_at_rank(std::uint64_t k) const noexcept;

  /// Makes `mine` cover the non-empty buckets of `theirs` with counters of >= `width` bytes.
  static void reserve_for(detail::bucket_counts& mine, const detail::bucket_counts& theirs,
                          unsigned width);
  void copy_scalars(const log_histogram& o) noexcept;
  void downscale_into(const detail::bucket_counts& from, detail::bucket_counts& to,
                      const log_histogram& r, int shift) const;
  static bool same_counts(const detail::bucket_counts& a, const detail::bucket_counts& b) noexcept;

  // Hot members first (one cache line).
  detail::fast_window fast_;
  const detail::log_index_cell* cells_ = nullptr;
  detail::bucket_counts pos_;
  std::uint64_t count_ = 0;
  double sums_[2] = {0, 0};
  double min_ = std::numeric_limits<double>::infinity();
  double max_ = -std::numeric_limits<double>::infinity();
  std::uint8_t sp_ = 0;          // max(scale, 0)
  std::uint8_t sn_ = 0;          // max(-scale, 0)
  std::uint8_t cell_shift_ = 0;  // 51 - sp_
  std::int8_t scale_ = 0;
  std::int32_t bias_ = 0;  // biased index = index + bias_
  // Cold members.
  std::uint64_t fast_floor_ = 0;  // bits of the least value above the zero threshold
  const std::uint64_t* thresholds_ = nullptr;
  detail::bucket_counts neg_;
  std::uint64_t rejected_ = 0;
  std::uint64_t zero_count_ = 0;
  double zero_threshold_ = 0;
  double rep_factor_ = 1;
  const double* bounds_ = nullptr;
  std::array<double, exact_capacity> exact_{};
};

/// The non-empty buckets of one sign, in ascending index order; a forward range of
/// `log_histogram::bucket`. Valid while its histogram is alive and unchanged.
class log_histogram::bucket_range {
 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = bucket;
    using difference_type = std::ptrdiff_t;
    using pointer = const bucket*;
    using reference = bucket;
    iterator() = default;
    [[nodiscard]] bucket operator*() const noexcept {
      return {static_cast<std::int32_t>(s_->first() + p_) - bias_, s_->get(p_)};
    }
    iterator& operator++() noexcept {
      p_ = s_->next_nonzero(p_ + 1);
      return *this;
    }
    iterator operator++(int) noexcept {
      iterator t = *this;
      ++*this;
      return t;
    }
    friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.p_ == b.p_; }
    friend bool operator!=(const iterator& a, const iterator& b) noexcept { return a.p_ != b.p_; }

   private:
    friend class bucket_range;
    iterator(const detail::bucket_counts* s, std::uint32_t p, std::int32_t bias) noexcept
        : s_(s), p_(p), bias_(bias) {}
    const detail::bucket_counts* s_ = nullptr;
    std::uint32_t p_ = 0;
    std::int32_t bias_ = 0;
  };
  [[nodiscard]] iterator begin() const noexcept { return {s_, s_->next_nonzero(0), bias_}; }
  [[nodiscard]] iterator end() const noexcept { return {s_, s_->size(), bias_}; }
  [[nodiscard]] bool empty() const noexcept { return s_->next_nonzero(0) == s_->size(); }
  /// The number of non-empty buckets. O(buckets).
  [[nodiscard]] std::size_t size() const noexcept {
    std::size_t n = 0;
    for (auto it = begin(); it != end(); ++it) ++n;
    return n;
  }
  /// The lowest and highest non-empty index (empty() must be false).
  [[nodiscard]] std::int32_t first_index() const noexcept { return (*begin()).index; }
  [[nodiscard]] std::int32_t last_index() const noexcept {
    return static_cast<std::int32_t>(s_->first() + s_->prev_nonzero(s_->size())) - bias_;
  }
  /// The count of bucket `index` (0 when empty or outside).
  [[nodiscard]] std::uint64_t count_at(std::int32_t index) const noexcept {
    return s_->at(static_cast<std::uint32_t>(index + bias_));
  }

 private:
  friend class log_histogram;
  bucket_range(const detail::bucket_counts* s, std::int32_t bias) noexcept : s_(s), bias_(bias) {}
  const detail::bucket_counts* s_;
  std::int32_t bias_;
};

inline log_histogram::bucket_range log_histogram::positive_buckets() const noexcept {
  return {&pos_, bias_};
}
inline log_histogram::bucket_range log_histogram::negative_buckets() const noexcept {
  return {&neg_, bias_};
}

struct log_histogram_decoded {
  /// The histogram, when the bytes were valid.
  std::optional<log_histogram> histogram;
  decode_error error = decode_error::none;
  /// Byte offset of the offending field, and its name ("" on success).
  std::size_t offset = 0;
  const char* field = "";

  [[nodiscard]] bool ok() const noexcept { return error == decode_error::none; }
  explicit operator bool() const noexcept { return ok(); }
  /// E.g. "log_histogram: truncated at byte 16 (field 'count')".
  [[nodiscard]] std::string message() const {
    if (ok()) return "log_histogram: ok";
    return "log_histogram: " + std::string(to_string(error)) + " at byte " +
           std::to_string(offset) + " (field '" + field + "')";
  }
};

static_assert(is_quantile_estimator_v<log_histogram>);
static_assert(is_mergeable_estimator_v<log_histogram>);

TOKCHRON_END_NAMESPACE

// The member functions' bodies and the serialised form.
#include "tokchron/quantile/detail/log_histogram_impl.hpp"
#include "tokchron/quantile/detail/log_histogram_wire.hpp"

#endif  // TOKCHRON_QUANTILE_LOG_HISTOGRAM_HPP
