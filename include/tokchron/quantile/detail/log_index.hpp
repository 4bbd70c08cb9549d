// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_QUANTILE_DETAIL_LOG_INDEX_HPP
#define TOKCHRON_QUANTILE_DETAIL_LOG_INDEX_HPP

/// \file
/// Internals of `log_histogram`: the exact IEEE-754 bucket index (no `log`), the tables behind
/// it, and the bucket-count storage. Not part of the API.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <type_traits>
#include <vector>

#include "tokchron/config.hpp"

TOKCHRON_BEGIN_NAMESPACE

namespace detail {

[[nodiscard]] inline std::uint64_t double_bits(double x) noexcept {
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
[[nodiscard]] inline double bits_double(std::uint64_t b) noexcept {
  double x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

/// A double-double number hi + lo (|lo| <= ulp(hi) / 2): about 104 significant bits, enough to
/// decide on which side of an irrational bucket boundary every double lies.
struct double_double {
  double hi;
  double lo;
};
[[nodiscard]] inline double_double dd_quick_two_sum(double a, double b) noexcept {
  const double s = a + b;
  return {s, b - (s - a)};
}
[[nodiscard]] inline double_double dd_mul(double_double a, double_double b) noexcept {
  const double p = a.hi * b.hi;
  double e = std::fma(a.hi, b.hi, -p);
  e += a.hi * b.lo + a.lo * b.hi;
  return dd_quick_two_sum(p, e);
}
/// One Newton step from the double square root doubles its precision.
[[nodiscard]] inline double_double dd_sqrt(double_double a) noexcept {
  const double s = std::sqrt(a.hi);
  const double p = s * s;
  const double pe = std::fma(s, s, -p);
  return dd_quick_two_sum(s, ((a.hi - p) - pe + a.lo) / (2.0 * s));
}

/// The finest scale `log_histogram` supports (2^12 buckets per octave, 0.0085 % error).
inline constexpr int log_max_scale = 12;
/// The coarsest (OpenTelemetry's minimum): base 2^1024.
inline constexpr int log_min_scale = -10;

/// One cell of the sub-octave table: the top (scale + 1) mantissa bits select a cell, which
/// holds at most one bucket boundary. `base` is the biased index of the cell's first values less
/// (b >> (51 - s) >> 1) (see the table), `next` the boundary inside it (as a 52-bit mantissa
/// threshold; a sample's mantissa m lies above it when m > next).
struct log_index_cell {
  std::uint64_t next;
  std::int64_t base;
};

/// The biased bucket index at scale s >= 0 of a positive normal double with bits `b`, from the
/// scale's cells and `shift` = 51 - s (the one index formula; negative scales shift it further).
inline std::uint64_t cell_index(std::uint64_t b, const log_index_cell* cells,
                                unsigned shift) noexcept {
  const std::uint64_t m = b & ((std::uint64_t{1} << 52) - 1);
  const log_index_cell& c = cells[m >> shift];
  return (b >> shift >> 1) + static_cast<std::uint64_t>(c.base) + (m > c.next ? 1u : 0u);
}

/// Exact tables for one scale s >= 0 (scales below 0 use scale 0 and shift).
///
/// Boundary k of an octave is b_k = 2^(k / 2^s); a double 2^e (1 + m / 2^52) lies above it
/// exactly when m > T_k = floor((b_k - 1) 2^52). T_k is computed in double-double arithmetic;
/// `min_margin` (the closest any b_k comes to a representable mantissa, in units of 2^-52) tells
/// how safely: tests check it is far above the double-double rounding error (~2^-48).
struct log_index_table {
  int scale = 0;
  std::vector<log_index_cell> cells;      // 2^(s+1)
  std::vector<double> bounds;             // 2^s: the double nearest b_k
  std::vector<std::uint64_t> thresholds;  // 2^s + 1: T_k, then a sentinel
  double min_margin = 1.0;

  explicit log_index_table(int s) : scale(s) {
    const std::size_t n = std::size_t{1} << s;
    // roots[i] = 2^(1 / 2^i)
    std::vector<double_double> roots(static_cast<std::size_t>(s) + 1, double_double{2.0, 0.0});
    for (std::size_t i = 1; i < roots.size(); ++i) roots[i] = dd_sqrt(roots[i - 1]);
    bounds.assign(n, 1.0);
    thresholds.assign(n + 1, std::numeric_limits<std::uint64_t>::max());
    thresholds[0] = 0;  // b_0 = 1: every mantissa but 0 lies above it
    for (std::size_t k = 1; k < n; ++k) {
      double_double b{1.0, 0.0};
      for (int j = 0; j < s; ++j)
        if (k & (std::size_t{1} << j)) b = dd_mul(b, roots[static_cast<std::size_t>(s - j)]);
      const double a = std::ldexp(b.hi - 1.0, 52);  // an integer: hi has 52 fraction bits
      const auto ai = static_cast<std::uint64_t>(a);
      thresholds[k] = b.lo < 0 ? ai - 1 : ai;
      bounds[k] = b.hi;
      const double margin = std::fabs(std::ldexp(b.lo, 52));
      if (margin < min_margin) min_margin = margin;
    }
    const std::size_t cells_n = n * 2;
    const int shift = 51 - s;
    cells.resize(cells_n);
    std::size_t below = 0;  // boundaries k with T_k < cell start
    for (std::size_t h = 0; h < cells_n; ++h) {
      const std::uint64_t start = static_cast<std::uint64_t>(h) << shift;
      while (below < n && thresholds[below] < start) ++below;
      // The biased index of a positive normal double with bits b in this cell is
      // (b >> shift >> 1) + base + (m > next): b >> shift >> 1 is E 2^s + h / 2 (E the exponent
      // field), so base folds in the bias 1025 2^s, the -h / 2, and the boundaries below.
      cells[h].base = static_cast<std::int64_t>(below) - 1 + (std::int64_t{1025} << s) -
                      static_cast<std::int64_t>(h >> 1);
      cells[h].next = thresholds[below];
      // At most one boundary per cell: cells are 2^(51-s) wide, boundaries >= 0.69 2^(52-s) apart.
      TOKCHRON_ASSERT(below + 1 > n ||
                      thresholds[below + 1] >= start + (std::uint64_t{1} << shift));
    }
  }
};

template <int S>
const log_index_table& log_index_table_instance() {
  static const log_index_table t(S);
  return t;
}
/// The table for scale `s` in [0, log_max_scale], built on first use (thread-safe); may throw
/// std::bad_alloc on that first use.
inline const log_index_table& log_index_table_for(int s) {
  using fn = const log_index_table& (*)();
  static constexpr fn tables[] = {
      &log_index_table_instance<0>, &log_index_table_instance<1>,  &log_index_table_instance<2>,
      &log_index_table_instance<3>, &log_index_table_instance<4>,  &log_index_table_instance<5>,
      &log_index_table_instance<6>, &log_index_table_instance<7>,  &log_index_table_instance<8>,
      &log_index_table_instance<9>, &log_index_table_instance<10>, &log_index_table_instance<11>,
      &log_index_table_instance<12>};
  static_assert(sizeof(tables) / sizeof(tables[0]) == log_max_scale + 1);
  return tables[s]();
}

/// The bits [lo, lo + span) of the values log_histogram::add counts on its fast path; span 0
/// (nothing) when default-made or moved from, since a moved-from histogram has no counters.
struct fast_window {
  std::uint64_t lo = 0;
  std::uint64_t span = 0;
  fast_window() noexcept = default;
  fast_window(std::uint64_t l, std::uint64_t s) noexcept : lo(l), span(s) {}
  fast_window(const fast_window&) noexcept = default;
  fast_window& operator=(const fast_window&) noexcept = default;
  fast_window(fast_window&& o) noexcept : lo(o.lo), span(o.span) { o.span = 0; }
  fast_window& operator=(fast_window&& o) noexcept {
    lo = o.lo;
    span = o.span;
    if (this != &o) o.span = 0;
    return *this;
  }
};

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
    with_data([&](const auto* c) {
      while (pos < size_ && c[pos] == 0) ++pos;
    });
    return pos < size_ ? pos : size_;
  }
  /// The previous window position < pos holding a non-zero count, or size() if none.
  [[nodiscard]] std::uint32_t prev_nonzero(std::uint32_t pos) const noexcept {
    std::uint32_t r = size_;
    with_data([&](const auto* c) {
      while (pos > 0)
        if (c[--pos] != 0) {
          r = pos;
          break;
        }
    });
    return r;
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
    zip(o, [](auto* d, const auto* sp, std::uint32_t n) {
      using T = std::remove_pointer_t<decltype(d)>;
      for (std::uint32_t i = 0; i < n; ++i) d[i] = static_cast<T>(d[i] + sp[i]);
    });
  }
  /// Adds every count of `o` (same biasing) if every sum fits the present counter width and
  /// `o`'s counters are no wider: true. Otherwise false, and nothing changed (an overflowing
  /// pass is subtracted back, exactly). One pass in the common case, instead of a pass to
  /// find the width the sums need and another to add. Only `o`'s non-empty range must lie
  /// inside this window.
  bool add_all_if_fits(const bucket_counts& o) noexcept {
    if (o.width_ > width_) return false;
    bool wrapped = false;
    zip(o, [&](auto* d, const auto* sp, std::uint32_t n) {
      using T = std::remove_pointer_t<decltype(d)>;
      unsigned w = 0;  // o's counters fit T, so a sum passed T's range exactly when it wrapped
      for (std::uint32_t i = 0; i < n; ++i) {
        const T r = static_cast<T>(d[i] + sp[i]);
        w |= r < d[i] ? 1u : 0u;
        d[i] = r;
      }
      if (w != 0) {
        wrapped = true;
        for (std::uint32_t i = 0; i < n; ++i) d[i] = static_cast<T>(d[i] - sp[i]);
      }
    });
    return !wrapped;
  }
  /// Undoes add_all_if_fits(o) or add_all_reserved(o).
  void subtract_all(const bucket_counts& o) noexcept {
    zip(o, [](auto* d, const auto* sp, std::uint32_t n) {
      using T = std::remove_pointer_t<decltype(d)>;
      for (std::uint32_t i = 0; i < n; ++i) d[i] = static_cast<T>(d[i] - sp[i]);
    });
  }
  /// Counter width needed to hold the sum of this and `o` in every bucket. Branch-free typed
  /// loops over the part of `o` that overlaps this window and the parts that do not.
  [[nodiscard]] unsigned width_for_sum(const bucket_counts& o) const noexcept {
    std::uint64_t mx = 0;
    o.with_data([&](const auto* src) {
      with_data([&](const auto* dst) {
        using S = std::remove_cv_t<std::remove_pointer_t<decltype(src)>>;
        using D = std::remove_cv_t<std::remove_pointer_t<decltype(dst)>>;
        // Two 16-bit counters add up within 32 bits: a narrower max that vectorises better.
        using W = std::conditional_t<sizeof(S) < 4 && sizeof(D) < 4, std::uint32_t, std::uint64_t>;
        const std::int64_t off = std::int64_t{o.first_} - std::int64_t{first_};  // o's i -> mine
        const std::int64_t n = o.size_;
        const std::int64_t a = off < 0 ? std::min<std::int64_t>(-off, n) : 0;
        const std::int64_t b = std::max<std::int64_t>(a, std::min<std::int64_t>(n, size_ - off));
        W m = 0;
        for (std::int64_t i = 0; i < a; ++i) m = std::max<W>(m, src[i]);
        for (std::int64_t i = a; i < b; ++i) m = std::max<W>(m, W{src[i]} + W{dst[i + off]});
        for (std::int64_t i = b; i < n; ++i) m = std::max<W>(m, src[i]);
        mx = m;
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
  /// Calls f(mine, theirs, n) with typed pointers to the counters of `o`'s non-empty range
  /// and to the same buckets here (which must lie inside this window).
  template <class F>
  void zip(const bucket_counts& o, F&& f) noexcept {
    const std::uint32_t lo = o.next_nonzero(0);
    if (lo == o.size_) return;
    const std::uint32_t hi = o.prev_nonzero(o.size_);
    TOKCHRON_ASSERT(o.first_ + lo >= first_ && o.first_ + hi < first_ + size_);
    o.with_data([&](const auto* src) {
      with_data([&](auto* dst) { f(dst + (o.first_ + lo - first_), src + lo, hi - lo + 1); });
    });
  }
  // Skips whole blocks of 8 counters while k lies beyond them (their sum is one short
  // dependency-free add tree), then walks the block that holds k one counter at a time.
  template <class T>
  std::uint32_t locate_in(const T* c, std::uint64_t k, std::uint64_t& seen,
                          bool descending) const noexcept {
    constexpr std::uint32_t step = 8;
    if (descending) {
      std::uint32_t i = size_;
      for (; i >= step; i -= step) {
        const std::uint64_t s = block_sum(c + (i - step));
        if (k < seen + s) break;
        seen += s;
      }
      while (i-- > 0) {
        seen += c[i];
        if (k < seen) return i;
      }
    } else {
      std::uint32_t i = 0;
      for (; size_ - i >= step; i += step) {
        const std::uint64_t s = block_sum(c + i);
        if (k < seen + s) break;
        seen += s;
      }
      for (; i < size_; ++i) {
        seen += c[i];
        if (k < seen) return i;
      }
    }
    return size_;
  }
  template <class T>
  static std::uint64_t block_sum(const T* c) noexcept {
    return ((std::uint64_t{c[0]} + c[1]) + (std::uint64_t{c[2]} + c[3])) +
           ((std::uint64_t{c[4]} + c[5]) + (std::uint64_t{c[6]} + c[7]));
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
    // Copy the part of the old window inside [lo, hi] (every non-zero count lies there; the
    // width never narrows), as one typed loop.
    const std::uint32_t from = first_ > lo ? first_ : lo;
    const std::uint32_t end = size_ == 0 ? from : std::min(first_ + size_ - 1, hi) + 1;
    if (from < end)
      with_data([&](const auto* src) {
        next.with_data([&](auto* dst) {
          using T = std::remove_pointer_t<decltype(dst)>;
          const auto* sp = src + (from - first_);
          T* dp = dst + (from - lo);
          for (std::uint32_t i = 0; i < end - from; ++i) dp[i] = static_cast<T>(sp[i]);
        });
      });
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

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_QUANTILE_DETAIL_LOG_INDEX_HPP
