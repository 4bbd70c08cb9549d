// SPDX-License-Identifier: MIT
// Benchmark-only: the benchmarks' baseline, tokchron's first log_histogram (commit 9fd5ae2),
// verbatim but for the namespace and the bucket index it shares with today's: a per-sample scalar
// insert, a linear scan of the buckets per quantile, a merge bucket by bucket. tokchron_bench times
// today's log_histogram against it in one binary (bench/ratios.py prints the ratios). Not part of
// the library; never include it outside bench/. It borrows tokchron's quantile_method, two helpers
// of quantile/exact.hpp and the bucket index of quantile/detail/log_index.hpp.
#ifndef TOKCHRON_BENCH_BASELINE_LOG_HISTOGRAM_V0_HPP
#define TOKCHRON_BENCH_BASELINE_LOG_HISTOGRAM_V0_HPP

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/quantile/detail/log_index.hpp"
#include "tokchron/quantile/estimator.hpp"
#include "tokchron/quantile/exact.hpp"

// A TU may rename it (the -march=native benchmark TU does, so that the linker cannot fold its
// instantiations into the generic ones).
#ifndef TOKCHRON_BENCH_V0_NAMESPACE
#define TOKCHRON_BENCH_V0_NAMESPACE tokchron_v0
#endif

namespace TOKCHRON_BENCH_V0_NAMESPACE {
using ::tokchron::quantile_method;

namespace detail {

// The index (value -> bucket by the bits of the double, and its tables) is today's, unchanged
// since: what the baseline keeps of its own is what changed, the counters, the insert, the query,
// the merge and the decoder.
using ::tokchron::detail::bits_double;
using ::tokchron::detail::cell_index;
using ::tokchron::detail::double_bits;
using ::tokchron::detail::double_double;
using ::tokchron::detail::fast_window;
using ::tokchron::detail::log_index_cell;
using ::tokchron::detail::log_index_table;
using ::tokchron::detail::log_index_table_for;
using ::tokchron::detail::log_max_scale;
using ::tokchron::detail::log_min_scale;

/// Dense bucket counters over a contiguous window of *biased* indices (always >= 0), widening
/// from 16- to 32- to 64-bit counters only when a counter would overflow. Single writer.
class bucket_counts {
 public:
  bucket_counts() noexcept { data_.c16 = nullptr; }
  ~bucket_counts() { release(); }
  bucket_counts(const bucket_counts& o) : first_(o.first_), size_(0), width_(o.width_) {
    data_.c16 = nullptr;
    if (o.size_ == 0) return;
    switch (width_) {  // throws std::bad_alloc like any copy
      case 2: data_.c16 = new std::uint16_t[o.size_]; break;
      case 4: data_.c32 = new std::uint32_t[o.size_]; break;
      default: data_.c64 = new std::uint64_t[o.size_]; break;
    }
    std::memcpy(raw(data_), raw(o.data_), std::size_t{o.size_} * o.width_);
    size_ = o.size_;
  }
  bucket_counts(bucket_counts&& o) noexcept
      : data_(o.data_), first_(o.first_), size_(o.size_), width_(o.width_) {
    o.data_.c16 = nullptr;
    o.size_ = 0;
    o.width_ = 2;
  }
  bucket_counts& operator=(const bucket_counts& o) {
    if (this != &o) {
      bucket_counts t(o);
      swap(t);
    }
    return *this;
  }
  bucket_counts& operator=(bucket_counts&& o) noexcept {
    bucket_counts t(std::move(o));
    swap(t);
    return *this;
  }
  void swap(bucket_counts& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(first_, o.first_);
    std::swap(size_, o.size_);
    std::swap(width_, o.width_);
  }

  /// Adds one to biased bucket `u`; false (nothing changed) if memory could not be had.
  bool increment(std::uint32_t u) noexcept {
    const std::uint32_t pos = u - first_;
    if (TOKCHRON_LIKELY(pos < size_ && increment_in_window(pos))) return true;
    return add_slow(u, 1);  // outside the window, or the counter is full: grow or widen
  }
  /// Adds one at window position `pos` (< size()) unless its counter is full: false then, and
  /// nothing changed (`increment` widens). 32-bit counters first: a busy histogram's steady state.
  bool increment_in_window(std::uint32_t pos) noexcept {
    if (TOKCHRON_LIKELY(width_ == 4)) {
      std::uint32_t& c = data_.c32[pos];
      if (TOKCHRON_LIKELY(++c != 0)) return true;  // one add to memory, its flags tested
      c = 0xFFFFFFFFu;
      return false;
    }
    if (width_ == 2) {
      std::uint16_t& c = data_.c16[pos];
      c = static_cast<std::uint16_t>(c + 1u);
      if (TOKCHRON_LIKELY(c != 0)) return true;
      c = 0xFFFFu;
      return false;
    }
    ++data_.c64[pos];
    return true;
  }
  /// Adds `n` to biased bucket `u`; false (nothing changed) if memory could not be had.
  bool add(std::uint32_t u, std::uint64_t n) noexcept {
    if (n == 0) return true;
    const std::uint32_t pos = u - first_;
    if (pos < size_ && get(pos) <= width_max(width_) - n) {
      put(pos, get(pos) + n);
      return true;
    }
    return add_slow(u, n);
  }

  /// The count of biased bucket `u` (0 outside the window).
  [[nodiscard]] std::uint64_t at(std::uint32_t u) const noexcept {
    const std::uint32_t pos = u - first_;
    return pos < size_ ? get(pos) : 0;
  }
  /// First biased index of the window and its length (zeros included).
  [[nodiscard]] std::uint32_t first() const noexcept { return first_; }
  [[nodiscard]] std::uint32_t size() const noexcept { return size_; }
  /// Bytes per counter: 2, 4 or 8.
  [[nodiscard]] unsigned width() const noexcept { return width_; }
  /// Heap bytes held by the counters.
  [[nodiscard]] std::size_t memory_bytes() const noexcept { return std::size_t{size_} * width_; }
  [[nodiscard]] std::uint64_t get(std::uint32_t pos) const noexcept {
    switch (width_) {
      case 2: return data_.c16[pos];
      case 4: return data_.c32[pos];
      default: return data_.c64[pos];
    }
  }

  /// The next window position >= pos holding a non-zero count, or size().
  [[nodiscard]] std::uint32_t next_nonzero(std::uint32_t pos) const noexcept {
    while (pos < size_ && get(pos) == 0) ++pos;
    return pos;
  }
  /// The previous window position < pos holding a non-zero count, or size() if none.
  [[nodiscard]] std::uint32_t prev_nonzero(std::uint32_t pos) const noexcept {
    while (pos > 0) {
      --pos;
      if (get(pos) != 0) return pos;
    }
    return size_;
  }
  /// Adds counts to `seen` walking ascending (or descending) until seen > k; returns that
  /// position, or size() when every count was added without passing k.
  [[nodiscard]] std::uint32_t locate(std::uint64_t k, std::uint64_t& seen,
                                     bool descending) const noexcept {
    switch (width_) {
      case 2: return locate_in(data_.c16, k, seen, descending);
      case 4: return locate_in(data_.c32, k, seen, descending);
      default: return locate_in(data_.c64, k, seen, descending);
    }
  }
  /// The sum of all counts (saturating is impossible: the histogram's total fits in 64 bits).
  [[nodiscard]] std::uint64_t total() const noexcept {
    std::uint64_t t = 0;
    for (std::uint32_t i = 0; i < size_; ++i) t += get(i);
    return t;
  }

  /// Zeroes every counter, keeping the memory (so a reused slice does not allocate).
  void clear() noexcept {
    if (size_ != 0) std::memset(raw(data_), 0, std::size_t{size_} * width_);
  }

  /// Makes the window cover biased [lo, hi] with counters of at least `width` bytes, keeping
  /// every count. False (nothing changed) if memory could not be had.
  bool reserve(std::uint32_t lo, std::uint32_t hi, unsigned width) noexcept {
    if (size_ != 0) {
      if (first_ < lo) lo = first_;
      if (first_ + size_ - 1 > hi) hi = first_ + size_ - 1;
      if (width < width_) width = width_;
      if (lo == first_ && hi == first_ + size_ - 1 && width == width_) return true;
    }
    return relayout(lo, hi, width);
  }

  /// Adds every count of `o` (same biasing); the caller has reserved room and width.
  /// Only `o`'s non-empty range must lie inside this window.
  void add_all_reserved(const bucket_counts& o) noexcept {
    const std::uint32_t lo = o.next_nonzero(0);
    if (lo == o.size_) return;
    const std::uint32_t hi = o.prev_nonzero(o.size_);
    TOKCHRON_ASSERT(o.first_ + lo >= first_ && o.first_ + hi < first_ + size_);
    o.with_data([&](const auto* src) {
      with_data([&](auto* dst) {
        using T = std::remove_pointer_t<decltype(dst)>;
        T* d = dst + (o.first_ + lo - first_);
        const auto* sp = src + lo;
        for (std::uint32_t i = 0; i <= hi - lo; ++i) d[i] = static_cast<T>(d[i] + sp[i]);
      });
    });
  }
  /// Counter width needed to hold the sum of this and `o` in every bucket.
  [[nodiscard]] unsigned width_for_sum(const bucket_counts& o) const noexcept {
    std::uint64_t mx = 0;
    o.with_data([&](const auto* src) {
      with_data([&](const auto* dst) {
        for (std::uint32_t i = 0; i < o.size_; ++i) {
          const std::uint32_t pos = o.first_ + i - first_;
          const std::uint64_t s = std::uint64_t{src[i]} + (pos < size_ ? dst[pos] : 0u);
          mx = s > mx ? s : mx;
        }
      });
    });
    unsigned w = width_for(mx);
    return w < width_ ? width_ : w;
  }
  /// Calls f with the counters as a typed pointer (uint16_t, uint32_t or uint64_t).
  template <class F>
  void with_data(F&& f) const {
    switch (width_) {
      case 2: f(static_cast<const std::uint16_t*>(data_.c16)); break;
      case 4: f(static_cast<const std::uint32_t*>(data_.c32)); break;
      default: f(static_cast<const std::uint64_t*>(data_.c64)); break;
    }
  }
  template <class F>
  void with_data(F&& f) {
    switch (width_) {
      case 2: f(data_.c16); break;
      case 4: f(data_.c32); break;
      default: f(data_.c64); break;
    }
  }
  [[nodiscard]] static unsigned width_for(std::uint64_t max_count) noexcept {
    return max_count <= 0xFFFFu ? 2u : max_count <= 0xFFFFFFFFu ? 4u : 8u;
  }

 private:
  template <class T>
  std::uint32_t locate_in(const T* c, std::uint64_t k, std::uint64_t& seen,
                          bool descending) const noexcept {
    if (descending) {
      for (std::uint32_t i = size_; i-- > 0;) {
        seen += c[i];
        if (k < seen) return i;
      }
    } else {
      for (std::uint32_t i = 0; i < size_; ++i) {
        seen += c[i];
        if (k < seen) return i;
      }
    }
    return size_;
  }
  union counters {
    std::uint16_t* c16;
    std::uint32_t* c32;
    std::uint64_t* c64;
  };
  static void* raw(counters c) noexcept { return c.c16; }
  static std::uint64_t width_max(unsigned w) noexcept {
    return w == 2 ? 0xFFFFu : w == 4 ? 0xFFFFFFFFu : ~std::uint64_t{0};
  }
  static bool allocate(counters& c, std::uint32_t n, unsigned w) noexcept {
    switch (w) {
      case 2: c.c16 = new (std::nothrow) std::uint16_t[n](); return c.c16 != nullptr;
      case 4: c.c32 = new (std::nothrow) std::uint32_t[n](); return c.c32 != nullptr;
      default: c.c64 = new (std::nothrow) std::uint64_t[n](); return c.c64 != nullptr;
    }
  }
  static void free(counters c, unsigned w) noexcept {
    switch (w) {
      case 2: delete[] c.c16; break;
      case 4: delete[] c.c32; break;
      default: delete[] c.c64; break;
    }
  }
  void release() noexcept {
    if (data_.c16 != nullptr) free(data_, width_);
    data_.c16 = nullptr;
    size_ = 0;
  }
  void put(std::uint32_t pos, std::uint64_t v) noexcept {
    switch (width_) {
      case 2: data_.c16[pos] = static_cast<std::uint16_t>(v); break;
      case 4: data_.c32[pos] = static_cast<std::uint32_t>(v); break;
      default: data_.c64[pos] = v; break;
    }
  }
  bool relayout(std::uint32_t lo, std::uint32_t hi, unsigned width) noexcept {
    const std::uint32_t n = hi - lo + 1;
    counters fresh;
    if (!allocate(fresh, n, width)) return false;
    bucket_counts next;
    next.data_ = fresh;
    next.first_ = lo;
    next.size_ = n;
    next.width_ = static_cast<std::uint8_t>(width);
    for (std::uint32_t i = 0; i < size_; ++i) {
      const std::uint64_t c = get(i);
      if (c != 0) next.put(first_ + i - lo, c);
    }
    swap(next);
    return true;
  }
  bool add_slow(std::uint32_t u, std::uint64_t n) noexcept {
    const std::uint32_t pos = u - first_;
    if (size_ != 0 && pos < size_) {
      // Overflow: widen, trimming the window to the buckets in use (no slack).
      std::uint32_t lo = next_nonzero(0), hi = prev_nonzero(size_);
      if (lo == size_) lo = hi = pos;
      lo = lo < pos ? lo : pos;
      hi = hi > pos ? hi : pos;
      const unsigned w = width_for(get(pos) + n);
      if (!relayout(first_ + lo, first_ + hi, w > width_ ? w : width_ * 2u)) return false;
    } else {
      // Grow towards u with slack (a quarter of the window, at least 8) to amortise.
      const std::uint32_t slack = size_ / 4 > 8 ? size_ / 4 : 8;
      std::uint32_t lo, hi;
      if (size_ == 0) {
        lo = u > slack ? u - slack : 0;
        hi = u + slack;
      } else if (u < first_) {
        lo = u > slack ? u - slack : 0;
        hi = first_ + size_ - 1;
      } else {
        lo = first_;
        hi = u + slack;
      }
      if (!relayout(lo, hi, width_ > width_for(n) ? width_ : width_for(n))) return false;
    }
    const std::uint32_t p = u - first_;
    put(p, get(p) + n);
    return true;
  }

  counters data_;
  std::uint32_t first_ = 0;
  std::uint32_t size_ = 0;
  std::uint8_t width_ = 2;
};

/// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320) of `n` bytes.
[[nodiscard]] inline std::uint32_t crc32(const unsigned char* p, std::size_t n) noexcept {
  struct table_t {
    std::uint32_t t[256];
    constexpr table_t() : t() {
      for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        t[i] = c;
      }
    }
  };
  static constexpr table_t table{};
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) c = table.t[(c ^ p[i]) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

}  // namespace detail

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
/// 8); 1 us..1 h at 1 % is 2032 buckets (4 KiB, 8 KiB with 32-bit counters). Queries walk the
/// buckets: O(buckets). count, sum, min and max are exact; NaN and infinities are rejected
/// and counted in `rejected()`.
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
  [[nodiscard]] static log_histogram with_mantissa_bits(int bits, double zero_threshold = 0.0) {
    if (bits < 0 || bits > max_scale)
      TOKCHRON_THROW(std::invalid_argument, "tokchron: log_histogram mantissa bits must be 0..12");
    return log_histogram(scale_tag{}, bits, zero_threshold);
  }
  /// The coarsest scale whose error bound is <= `relative_accuracy` (throws
  /// std::invalid_argument outside [relative_error_for(max_scale), 1)).
  [[nodiscard]] static int scale_for(double relative_accuracy) {
    for (int s = min_scale; s <= max_scale; ++s)
      if (relative_error_for(s) <= relative_accuracy && relative_accuracy < 1.0) return s;
    TOKCHRON_THROW(std::invalid_argument,
                   "tokchron: log_histogram relative accuracy must be in [8.5e-5, 1)");
  }
  /// (base - 1)/(base + 1) at `scale`, plus 1e-15 for the representative's rounding.
  [[nodiscard]] static double relative_error_for(int scale) noexcept {
    const double inv_base = std::exp2(-std::ldexp(1.0, -scale));  // 1/base, 0 at scale -10
    return (1.0 - inv_base) / (1.0 + inv_base) + 1e-15;
  }

  /// Records `x`. Zero and negative values are kept (see the class comment); NaN and
  /// infinities are rejected (false) and counted, as is a value whose bucket memory could not
  /// be allocated (nothing else changes then). O(1), noexcept.
  TOKCHRON_ALWAYS_INLINE bool add(double x) noexcept {
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

  /// Records every sample of [first, last) (a forward range of values convertible to double)
  /// exactly as that many `add(x)` calls would, bit for bit, but with the histogram's hot state
  /// held in registers across the batch: the cheapest way to record several samples at once (a
  /// finished request's ITL samples, a per-thread buffer). Returns how many samples were
  /// taken (the rest were rejected and counted).
  template <class It>
  std::size_t add(It first, It last) noexcept(
      noexcept(static_cast<double>(*first)) && noexcept(++first) && noexcept(first != last)) {
    const std::uint64_t before = count_;
    while (first != last) {
      pos_.with_data([&](auto* counts) { first = add_run(first, last, counts); });
      if (first == last) break;
      add(static_cast<double>(*first));  // the sample that left the fast path goes the full way
      ++first;
    }
    return static_cast<std::size_t>(count_ - before);
  }

  /// Adds every sample of `other`. Same scale: lossless (bucket counts add). A finer `other` is
  /// first downscaled to this scale; a coarser one downscales this histogram to its scale. The
  /// zero thresholds must be equal (std::invalid_argument). A merge whose sample or rejected
  /// count would pass 2^64 (possible only with deserialised bytes) throws std::overflow_error.
  /// Strong guarantee: on any exception nothing changes. O(buckets).
  void merge(const log_histogram& other) {
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
    reserve_for(pos_, other.pos_);
    reserve_for(neg_, other.neg_);
    pos_.add_all_reserved(other.pos_);
    neg_.add_all_reserved(other.neg_);
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

  /// A copy at the coarser scale `new_scale` (<= scale(), >= min_scale; std::invalid_argument
  /// otherwise): bucket i becomes bucket floor(i / 2^(scale() - new_scale)), counts add, so
  /// no sample is lost; the error bound becomes that of `new_scale`. O(buckets).
  [[nodiscard]] log_histogram downscaled(int new_scale) const {
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

  /// Forgets every sample and the rejected count; keeps the scale, threshold and memory (so a
  /// reused slice does not allocate).
  void clear() noexcept {
    pos_.clear();
    neg_.clear();
    count_ = rejected_ = zero_count_ = 0;
    sums_[0] = sums_[1] = 0;
    min_ = std::numeric_limits<double>::infinity();
    max_ = -std::numeric_limits<double>::infinity();
    sync_fast();
  }

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
    if (count_ == 0) return std::nullopt;
    return min_;
  }
  [[nodiscard]] std::optional<double> max() const noexcept {
    if (count_ == 0) return std::nullopt;
    return max_;
  }

  /// The q-quantile (q in [0, 1], std::invalid_argument otherwise) by numpy's linear method,
  /// within relative_error() of the exact one (class comment); empty when there are no samples.
  [[nodiscard]] std::optional<double> quantile(double q) const {
    return quantile(q, quantile_method::linear);
  }
  /// The q-quantile by `method`, within relative_error() of `exact_quantiles::quantile(q, method)`.
  [[nodiscard]] std::optional<double> quantile(double q, quantile_method method) const {
    ::tokchron::detail::check_probability(q);
    if (count_ == 0) return std::nullopt;
    if (is_exact()) {
      std::array<double, exact_capacity> s{};
      std::copy(exact_.begin(), exact_.begin() + static_cast<std::ptrdiff_t>(count_), s.begin());
      std::sort(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(count_));
      return ::tokchron::detail::sorted_quantile(s.begin(), static_cast<std::size_t>(count_), q,
                                                 method);
    }
    return ::tokchron::detail::sorted_quantile(rank_reader{this}, static_cast<std::size_t>(count_),
                                               q, method);
  }

  /// The number of samples <= x: exact while is_exact() and outside [min, max]; otherwise every
  /// sample in x's bucket counts, so for x > zero_threshold() it is the exact number of samples
  /// <= bucket_upper(index_of(x)). 0 for NaN. O(buckets).
  [[nodiscard]] std::uint64_t rank(double x) const noexcept {
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
  [[nodiscard]] double bucket_lower(std::int32_t index) const noexcept {
    if (scale_ <= 0) return std::ldexp(1.0, index * (1 << sn_));
    const std::int32_t n = 1 << scale_;
    const std::int32_t q = floor_div(index, scale_);
    return std::ldexp(bounds_[static_cast<std::size_t>(index - q * n)], q);
  }
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
  [[nodiscard]] std::size_t serialized_size() const noexcept {
    return 64 + (is_exact() ? count_ * 8 : 0) + store_size(pos_) + store_size(neg_) + 4;
  }
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

  log_histogram(scale_tag, int scale, double zero_threshold) {
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

  struct rank_reader {
    const log_histogram* h;
    double operator[](std::ptrdiff_t i) const noexcept {
      return h->value_at_rank(static_cast<std::uint64_t>(i));
    }
  };

  static std::int32_t floor_div(std::int32_t i, int shift) noexcept {
    return i >= 0 ? (i >> shift) : -((-i - 1) >> shift) - 1;
  }

  bool reject() noexcept {
    ++rejected_;
    return false;
  }
  void record(double x) noexcept {
    if (count_ < exact_capacity) exact_[static_cast<std::size_t>(count_)] = x;
    sums_[count_ & 1] += x;  // two interleaved partial sums halve the add's dependency chain
    ++count_;
    // Branches, not minsd/maxsd: once the extremes settle the branches are predicted and
    // min_/max_ leave the loop-carried dependency chain.
    if (TOKCHRON_UNLIKELY(x < min_)) min_ = x;
    if (TOKCHRON_UNLIKELY(x > max_)) max_ = x;
  }
  TOKCHRON_NOINLINE bool add_slow(double x) noexcept {
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
  /// add(x)'s fast path over [first, last) with the hot state in locals; stops at the first
  /// sample the fast path does not take (or whose counter is full) and returns its position.
  template <class T, class It>
  It add_run(It first, It last, T* counts) noexcept(
      noexcept(static_cast<double>(*first)) && noexcept(++first) && noexcept(first != last)) {
    const std::uint64_t lo = fast_.lo;
    const std::uint64_t span = fast_.span;
    const unsigned shift = cell_shift_;
    const detail::log_index_cell* const cells = cells_;
    const std::uint32_t window = pos_.first();
    // The two partial sums of record(x): `cur` takes the next sample, then they trade places.
    double cur = sums_[count_ & 1];
    double other = sums_[(count_ + 1) & 1];
    double mn = min_;
    double mx = max_;
    std::uint64_t n = 0;
    for (; first != last; ++first) {
      const double x = static_cast<double>(*first);
      const std::uint64_t b = detail::double_bits(x);
      if (TOKCHRON_UNLIKELY(b - lo >= span)) break;
      const std::uint64_t u = detail::cell_index(b, cells, shift);
      T& k = counts[static_cast<std::uint32_t>(u) - window];
      if (TOKCHRON_UNLIKELY(k == std::numeric_limits<T>::max())) break;
      k = static_cast<T>(k + 1u);
      cur += x;
      std::swap(cur, other);
      ++n;
      if (TOKCHRON_UNLIKELY(x < mn)) mn = x;
      if (TOKCHRON_UNLIKELY(x > mx)) mx = x;
    }
    count_ += n;
    sums_[count_ & 1] = cur;
    sums_[(count_ + 1) & 1] = other;
    min_ = mn;
    max_ = mx;
    return first;
  }
  /// Sets fast_ to the bits of the values add may count without further checks: positive
  /// normal finite values above the zero threshold whose bucket lies in the positive window,
  /// and none while the samples are kept exactly or the scale is negative (its index needs a
  /// second shift). Called wherever the window, the count or the layout changes.
  void sync_fast() noexcept {
    fast_ = detail::fast_window{};
    if (scale_ < 0 || count_ < exact_capacity || pos_.size() == 0) return;
    constexpr std::uint64_t normal_min = std::uint64_t{1} << 52;           // DBL_MIN
    constexpr std::uint64_t finite_max = (std::uint64_t{2047} << 52) - 1;  // DBL_MAX
    const std::uint64_t lo = std::max({lowest_bits(pos_.first()), normal_min, fast_floor_});
    const std::uint64_t hi = std::min(lowest_bits(pos_.first() + pos_.size()) - 1, finite_max);
    if (lo <= hi) fast_ = detail::fast_window{lo, hi - lo + 1};
  }
  /// The bits of the smallest double in biased bucket `u` (scale >= 0), clamped to
  /// [0, bits of infinity]: bucket k of octave E holds the mantissas (T_k, T_(k+1)].
  std::uint64_t lowest_bits(std::uint32_t u) const noexcept {
    const std::int64_t e = (static_cast<std::int64_t>(u) >> sp_) - 1025;
    if (e < 0) return 0;
    if (e > 2046) return std::uint64_t{2047} << 52;
    const std::uint32_t k = u & ((std::uint32_t{1} << sp_) - 1);
    return (static_cast<std::uint64_t>(e) << 52) | (thresholds_[k] + 1);
  }
  /// The biased bucket index of a > 0, finite (subnormals included).
  std::uint32_t biased_index(double a) const noexcept {
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

  /// min and max lie in the lowest and the highest occupied bucket (the deserialiser's check).
  bool extremes_consistent() const noexcept {
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
  double clamp(double v) const noexcept { return v < min_ ? min_ : (v > max_ ? max_ : v); }
  /// The answer for the k-th smallest sample (0-based), non-exact mode.
  double value_at_rank(std::uint64_t k) const noexcept {
    if (k == 0) return min_;
    if (k + 1 >= count_) return max_;
    std::uint64_t seen = 0;
    std::uint32_t p = neg_.locate(k, seen, true);
    if (p != neg_.size())
      return clamp(-bucket_value(static_cast<std::int32_t>(neg_.first() + p) - bias_));
    seen += zero_count_;
    if (k < seen) return clamp(0.0);
    p = pos_.locate(k, seen, false);
    if (p != pos_.size())
      return clamp(bucket_value(static_cast<std::int32_t>(pos_.first() + p) - bias_));
    return max_;
  }

  static void reserve_for(detail::bucket_counts& mine, const detail::bucket_counts& theirs) {
    const std::uint32_t lo = theirs.next_nonzero(0);
    if (lo == theirs.size()) return;
    const std::uint32_t hi = theirs.prev_nonzero(theirs.size());
    if (!mine.reserve(theirs.first() + lo, theirs.first() + hi, mine.width_for_sum(theirs)))
      throw_bad_alloc();
  }
  [[noreturn]] static void throw_bad_alloc() {
#if TOKCHRON_HAS_EXCEPTIONS
    throw std::bad_alloc();
#else
    std::abort();
#endif
  }
  void copy_scalars(const log_histogram& o) noexcept {
    count_ = o.count_;
    rejected_ = o.rejected_;
    zero_count_ = o.zero_count_;
    sums_[0] = o.sums_[0];
    sums_[1] = o.sums_[1];
    min_ = o.min_;
    max_ = o.max_;
    exact_ = o.exact_;
  }
  void downscale_into(const detail::bucket_counts& from, detail::bucket_counts& to,
                      const log_histogram& r, int shift) const {
    const std::uint32_t lo = from.next_nonzero(0);
    if (lo == from.size()) return;
    const std::uint32_t hi = from.prev_nonzero(from.size());
    auto map = [&](std::uint32_t p) {
      const std::int32_t i = static_cast<std::int32_t>(from.first() + p) - bias_;
      return static_cast<std::uint32_t>(floor_div(i, shift) + r.bias_);
    };
    if (!to.reserve(map(lo), map(hi), from.width())) throw_bad_alloc();
    for (std::uint32_t p = lo; p <= hi; ++p)
      if (!to.add(map(p), from.get(p))) throw_bad_alloc();
  }
  static bool same_counts(const detail::bucket_counts& a, const detail::bucket_counts& b) noexcept {
    const std::uint32_t lo = std::min(a.first(), b.first());
    const std::uint32_t hi = std::max(a.first() + a.size(), b.first() + b.size());
    for (std::uint32_t u = lo; u < hi; ++u)
      if (a.at(u) != b.at(u)) return false;
    return true;
  }
  static std::size_t store_size(const detail::bucket_counts& s) noexcept {
    const std::uint32_t lo = s.next_nonzero(0);
    if (lo == s.size()) return 9;
    const std::uint32_t hi = s.prev_nonzero(s.size());
    std::uint64_t mx = 0;
    for (std::uint32_t p = lo; p <= hi; ++p) mx = std::max(mx, s.get(p));
    return 9 + std::size_t{hi - lo + 1} * byte_width(mx);
  }
  static unsigned byte_width(std::uint64_t mx) noexcept {
    return mx <= 0xFFu ? 1u : mx <= 0xFFFFu ? 2u : mx <= 0xFFFFFFFFu ? 4u : 8u;
  }

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

namespace detail {
struct le_writer {
  unsigned char* p;
  void u8(unsigned v) noexcept { *p++ = static_cast<unsigned char>(v); }
  void u(std::uint64_t v, unsigned bytes) noexcept {
    for (unsigned i = 0; i < bytes; ++i) *p++ = static_cast<unsigned char>(v >> (8 * i));
  }
  void f64(double v) noexcept { u(double_bits(v), 8); }
};
struct le_reader {
  const unsigned char* data;
  std::size_t size;
  std::size_t pos = 0;
  log_histogram_decoded* out;
  bool need(std::size_t n, const char* field) noexcept {
    if (size - pos >= n) return true;
    out->error = decode_error::truncated;
    out->offset = pos;
    out->field = field;
    return false;
  }
  std::uint64_t u(unsigned bytes) noexcept {
    std::uint64_t v = 0;
    for (unsigned i = 0; i < bytes; ++i) v |= std::uint64_t{data[pos + i]} << (8 * i);
    pos += bytes;
    return v;
  }
  double f64() noexcept { return bits_double(u(8)); }
  bool fail(decode_error e, std::size_t at, const char* field) noexcept {
    out->error = e;
    out->offset = at;
    out->field = field;
    return false;
  }
};
}  // namespace detail

inline std::size_t log_histogram::serialize_to(unsigned char* out,
                                               std::size_t capacity) const noexcept {
  const std::size_t n = serialized_size();
  if (capacity < n) return n;
  detail::le_writer w{out};
  w.u8('T');
  w.u8('K');
  w.u8('L');
  w.u8('H');
  w.u8(format_version);
  w.u8(static_cast<unsigned>(static_cast<std::uint8_t>(scale_)));
  w.u8(is_exact() ? 1u : 0u);
  w.u8(0);
  w.f64(zero_threshold_);
  w.u(count_, 8);
  w.u(rejected_, 8);
  w.f64(sum());
  w.f64(min_);
  w.f64(max_);
  w.u(zero_count_, 8);
  if (is_exact())
    for (std::uint64_t i = 0; i < count_; ++i) w.f64(exact_[static_cast<std::size_t>(i)]);
  for (const detail::bucket_counts* s : {&pos_, &neg_}) {
    const std::uint32_t lo = s->next_nonzero(0);
    if (lo == s->size()) {
      w.u(0, 4);
      w.u(0, 4);
      w.u8(1);
      continue;
    }
    const std::uint32_t hi = s->prev_nonzero(s->size());
    std::uint64_t mx = 0;
    for (std::uint32_t p = lo; p <= hi; ++p) mx = std::max(mx, s->get(p));
    const unsigned bw = byte_width(mx);
    w.u(static_cast<std::uint32_t>(static_cast<std::int32_t>(s->first() + lo) - bias_), 4);
    w.u(hi - lo + 1, 4);
    w.u8(bw);
    for (std::uint32_t p = lo; p <= hi; ++p) w.u(s->get(p), bw);
  }
  w.u(detail::crc32(out, n - 4), 4);
  return n;
}

inline log_histogram_decoded log_histogram::deserialize(const void* data,
                                                        std::size_t size) noexcept {
  log_histogram_decoded out;
  const auto* bytes = static_cast<const unsigned char*>(data);
  if (bytes == nullptr) size = 0;
  detail::le_reader r{bytes, size, 0, &out};
  if (!r.need(4, "magic")) return out;
  if (std::memcmp(bytes, "TKLH", 4) != 0) {
    r.fail(decode_error::bad_magic, 0, "magic");
    return out;
  }
  r.pos = 4;
  if (!r.need(4, "version")) return out;
  const auto version = static_cast<unsigned>(r.u(1));
  if (version != format_version) {
    r.fail(version == 0 ? decode_error::invalid_field : decode_error::unsupported_version, 4,
           "version");
    return out;
  }
  const auto scale = static_cast<int>(static_cast<std::int8_t>(static_cast<std::uint8_t>(r.u(1))));
  if (scale < min_scale || scale > max_scale) {
    r.fail(decode_error::invalid_field, 5, "scale");
    return out;
  }
  const auto flags = static_cast<unsigned>(r.u(1));
  if (flags > 1) {
    r.fail(decode_error::invalid_field, 6, "flags");
    return out;
  }
  if (r.u(1) != 0) {
    r.fail(decode_error::invalid_field, 7, "reserved");
    return out;
  }
  if (!r.need(56, "zero_threshold")) {
    static const char* const names[] = {"zero_threshold", "count", "rejected", "sum", "min", "max",
                                        "zero_count"};
    out.field = names[(size - 8) / 8];
    out.offset = 8 + (size - 8) / 8 * 8;
    return out;
  }
  const double zero_threshold = r.f64();
  if (!(zero_threshold >= 0) || !std::isfinite(zero_threshold)) {
    r.fail(decode_error::invalid_field, 8, "zero_threshold");
    return out;
  }
  const std::uint64_t count = r.u(8);
  const std::uint64_t rejected = r.u(8);
  const double sum = r.f64();
  const double mn = r.f64();
  const double mx = r.f64();
  const std::uint64_t zero_count = r.u(8);
  if (!std::isfinite(sum)) {
    // A finite sum can overflow to infinity only past 1.8e308 total: refuse rather than guess.
    r.fail(decode_error::invalid_field, 32, "sum");
    return out;
  }
  if (count == 0 ? (mn != std::numeric_limits<double>::infinity() ||
                    mx != -std::numeric_limits<double>::infinity())
                 : (!std::isfinite(mn) || !std::isfinite(mx) || mn > mx)) {
    r.fail(decode_error::invalid_field, 40, "min");
    return out;
  }
  if ((flags == 1) != (count <= exact_capacity)) {
    r.fail(decode_error::inconsistent, 6, "flags");
    return out;
  }
  TOKCHRON_TRY {
    log_histogram h(scale_tag{}, scale, zero_threshold);
    if (flags == 1) {
      for (std::uint64_t i = 0; i < count; ++i) {
        if (!r.need(8, "exact_samples")) return out;
        const std::size_t at = r.pos;
        const double x = r.f64();
        if (!std::isfinite(x) || x < mn || x > mx) {
          r.fail(decode_error::invalid_field, at, "exact_samples");
          return out;
        }
        h.exact_[static_cast<std::size_t>(i)] = x;
      }
    }
    std::uint64_t bucket_total = 0;
    const std::int64_t lo_index = -static_cast<std::int64_t>(h.bias_);
    const std::int64_t hi_index = (std::int64_t{1025} << h.sp_ >> h.sn_);  // above DBL_MAX
    for (detail::bucket_counts* s : {&h.pos_, &h.neg_}) {
      const bool positive = s == &h.pos_;
      if (!r.need(9, positive ? "positive.header" : "negative.header")) return out;
      const std::size_t at = r.pos;
      const auto first = static_cast<std::int32_t>(static_cast<std::uint32_t>(r.u(4)));
      const auto n = static_cast<std::uint32_t>(r.u(4));
      const auto bw = static_cast<unsigned>(r.u(1));
      if (bw != 1 && bw != 2 && bw != 4 && bw != 8) {
        r.fail(decode_error::invalid_field, at + 8, positive ? "positive.width" : "negative.width");
        return out;
      }
      if (n == 0) {
        if (first != 0) {
          r.fail(decode_error::invalid_field, at, positive ? "positive.first" : "negative.first");
          return out;
        }
        continue;
      }
      if (first < lo_index || first > hi_index || std::int64_t{first} + n - 1 > hi_index) {
        r.fail(decode_error::invalid_field, at, positive ? "positive.first" : "negative.first");
        return out;
      }
      if (!r.need(std::size_t{n} * bw, positive ? "positive.counts" : "negative.counts"))
        return out;
      const std::size_t counts_at = r.pos;
      const auto u0 = static_cast<std::uint32_t>(first + h.bias_);
      std::uint64_t widest = 0, last = 0, firstc = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        const std::uint64_t c = r.u(bw);
        if (i == 0) firstc = c;
        last = c;
        widest = std::max(widest, c);
        if (bucket_total + c < bucket_total) {
          r.fail(decode_error::inconsistent, counts_at + std::size_t{i} * bw,
                 positive ? "positive.counts" : "negative.counts");
          return out;
        }
        bucket_total += c;
      }
      if (firstc == 0 || last == 0) {  // canonical: trimmed to the non-empty range
        r.fail(decode_error::invalid_field, counts_at,
               positive ? "positive.counts" : "negative.counts");
        return out;
      }
      if (!s->reserve(u0, u0 + n - 1, detail::bucket_counts::width_for(widest))) {
        r.fail(decode_error::out_of_memory, counts_at,
               positive ? "positive.counts" : "negative.counts");
        return out;
      }
      r.pos = counts_at;
      for (std::uint32_t i = 0; i < n; ++i) s->add(u0 + i, r.u(bw));
    }
    const std::size_t crc_at = r.pos;
    if (!r.need(4, "checksum")) return out;
    if (static_cast<std::uint32_t>(r.u(4)) != detail::crc32(bytes, crc_at)) {
      r.fail(decode_error::checksum_mismatch, crc_at, "checksum");
      return out;
    }
    if (r.pos != size) {
      r.fail(decode_error::trailing_bytes, r.pos, "end");
      return out;
    }
    if (bucket_total + zero_count < bucket_total || bucket_total + zero_count != count) {
      r.fail(decode_error::inconsistent, 16, "count");
      return out;
    }
    h.count_ = count;
    h.rejected_ = rejected;
    h.zero_count_ = zero_count;
    h.sums_[0] = sum;
    h.min_ = mn;
    h.max_ = mx;
    if (count != 0 && !h.extremes_consistent()) {
      r.fail(decode_error::inconsistent, 40, "min/max");
      return out;
    }
    h.sync_fast();
    if (flags == 1) {  // the kept samples must be exactly the bucketed ones
      log_histogram check(scale_tag{}, scale, zero_threshold);
      for (std::uint64_t i = 0; i < count; ++i) check.add(h.exact_[static_cast<std::size_t>(i)]);
      if (!same_counts(check.pos_, h.pos_) || !same_counts(check.neg_, h.neg_) ||
          check.zero_count_ != h.zero_count_ || check.min_ != mn || check.max_ != mx) {
        r.fail(decode_error::inconsistent, 64, "exact_samples");
        return out;
      }
    }
    out.histogram.emplace(std::move(h));
  }
  TOKCHRON_CATCH_ALL { r.fail(decode_error::out_of_memory, r.pos, "buckets"); }
  return out;
}

}  // namespace TOKCHRON_BENCH_V0_NAMESPACE

#endif  // TOKCHRON_BENCH_BASELINE_LOG_HISTOGRAM_V0_HPP
