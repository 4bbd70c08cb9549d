// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_QUANTILE_DETAIL_LOG_HISTOGRAM_WIRE_HPP
#define TOKCHRON_QUANTILE_DETAIL_LOG_HISTOGRAM_WIRE_HPP

/// \file
/// `log_histogram`'s serialised form: the byte layout as named offsets, the writer, and the
/// reader as small decode steps, each validating its fields. Included by
/// `tokchron/quantile/log_histogram.hpp`; not part of the API.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "tokchron/quantile/log_histogram.hpp"

TOKCHRON_BEGIN_NAMESPACE

namespace detail {
/// The byte layout of a serialised log_histogram, format version 1, all little-endian.
namespace log_histogram_layout {
inline constexpr std::size_t magic = 0;           ///< "TKLH"
inline constexpr std::size_t version = 4;         ///< u8
inline constexpr std::size_t scale = 5;           ///< i8
inline constexpr std::size_t flags = 6;           ///< u8; bit 0: exact samples follow
inline constexpr std::size_t reserved = 7;        ///< u8, 0
inline constexpr std::size_t zero_threshold = 8;  ///< f64
inline constexpr std::size_t count = 16;          ///< u64
inline constexpr std::size_t rejected = 24;       ///< u64
inline constexpr std::size_t sum = 32;            ///< f64
inline constexpr std::size_t min = 40;            ///< f64
inline constexpr std::size_t max = 48;            ///< f64
inline constexpr std::size_t zero_count = 56;     ///< u64
/// Then, if flagged, count x f64 exact samples; then the positive and the negative store.
inline constexpr std::size_t header_size = 64;
inline constexpr std::size_t exact_sample_size = 8;
/// A store, from its own start: i32 first index, u32 n, u8 counter width, n counters.
inline constexpr std::size_t store_first = 0;
inline constexpr std::size_t store_length = 4;
inline constexpr std::size_t store_width = 8;
inline constexpr std::size_t store_header_size = 9;
/// Last: u32 CRC-32 of every byte before it.
inline constexpr std::size_t checksum_size = 4;
}  // namespace log_histogram_layout

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

/// The decode steps of `deserialize`, in the order of the bytes. Each reads its fields, checks
/// them, and on a refusal records the error, offset and field in the reader's result and
/// returns false.
struct log_histogram::wire {
  /// The fixed-size fields of the header.
  struct header {
    int scale = 0;
    unsigned flags = 0;
    double zero_threshold = 0;
    std::uint64_t count = 0;
    std::uint64_t rejected = 0;
    double sum = 0;
    double min = 0;
    double max = 0;
    std::uint64_t zero_count = 0;
  };
  /// Field names of one store (positive or negative).
  struct store_names {
    const char* header;
    const char* first;
    const char* width;
    const char* counts;
  };
  static constexpr store_names positive{"positive.header", "positive.first", "positive.width",
                                        "positive.counts"};
  static constexpr store_names negative{"negative.header", "negative.first", "negative.width",
                                        "negative.counts"};

  /// Magic, version, scale, flags and the reserved byte.
  static bool read_prefix(detail::le_reader& r, header& h) noexcept {
    namespace at = detail::log_histogram_layout;
    if (!r.need(4, "magic")) return false;
    if (std::memcmp(r.data + at::magic, "TKLH", 4) != 0)
      return r.fail(decode_error::bad_magic, at::magic, "magic");
    r.pos = at::version;
    if (!r.need(at::zero_threshold - at::version, "version")) return false;
    const auto version = static_cast<unsigned>(r.u(1));
    if (version != format_version)
      return r.fail(version == 0 ? decode_error::invalid_field : decode_error::unsupported_version,
                    at::version, "version");
    h.scale = static_cast<int>(static_cast<std::int8_t>(static_cast<std::uint8_t>(r.u(1))));
    if (h.scale < min_scale || h.scale > max_scale)
      return r.fail(decode_error::invalid_field, at::scale, "scale");
    h.flags = static_cast<unsigned>(r.u(1));
    if (h.flags > 1) return r.fail(decode_error::invalid_field, at::flags, "flags");
    if (r.u(1) != 0) return r.fail(decode_error::invalid_field, at::reserved, "reserved");
    return true;
  }

  /// zero_threshold .. zero_count, each checked alone and against the flags.
  static bool read_scalars(detail::le_reader& r, header& h) noexcept {
    namespace at = detail::log_histogram_layout;
    if (!r.need(at::header_size - at::zero_threshold, "zero_threshold")) {
      // Name the 8-byte field the bytes end in.
      static const char* const names[] = {
          "zero_threshold", "count", "rejected", "sum", "min", "max", "zero_count"};
      const std::size_t field = (r.size - at::zero_threshold) / 8;
      r.out->field = names[field];
      r.out->offset = at::zero_threshold + field * 8;
      return false;
    }
    h.zero_threshold = r.f64();
    if (!(h.zero_threshold >= 0) || !std::isfinite(h.zero_threshold))
      return r.fail(decode_error::invalid_field, at::zero_threshold, "zero_threshold");
    h.count = r.u(8);
    h.rejected = r.u(8);
    h.sum = r.f64();
    h.min = r.f64();
    h.max = r.f64();
    h.zero_count = r.u(8);
    // A finite sum can overflow to infinity only past 1.8e308 total: refuse rather than guess.
    if (!std::isfinite(h.sum)) return r.fail(decode_error::invalid_field, at::sum, "sum");
    const bool extremes_ok = h.count == 0
                                 ? (h.min == std::numeric_limits<double>::infinity() &&
                                    h.max == -std::numeric_limits<double>::infinity())
                                 : (std::isfinite(h.min) && std::isfinite(h.max) && h.min <= h.max);
    if (!extremes_ok) return r.fail(decode_error::invalid_field, at::min, "min");
    if ((h.flags == 1) != (h.count <= exact_capacity))
      return r.fail(decode_error::inconsistent, at::flags, "flags");
    return true;
  }

  /// The exact samples, when flagged: finite and within [min, max].
  static bool read_exact(detail::le_reader& r, const header& hd, log_histogram& h) noexcept {
    if (hd.flags != 1) return true;
    for (std::uint64_t i = 0; i < hd.count; ++i) {
      if (!r.need(detail::log_histogram_layout::exact_sample_size, "exact_samples")) return false;
      const std::size_t at = r.pos;
      const double x = r.f64();
      if (!std::isfinite(x) || x < hd.min || x > hd.max)
        return r.fail(decode_error::invalid_field, at, "exact_samples");
      h.exact_[static_cast<std::size_t>(i)] = x;
    }
    return true;
  }

  /// One store into `s` (h.pos_ or h.neg_): its header, then its counters, which must be
  /// trimmed to the non-empty range and add up to no more than 2^64 with `total`.
  static bool read_store(detail::le_reader& r, log_histogram& h, detail::bucket_counts& s,
                         const store_names& name, std::uint64_t& total) noexcept {
    namespace at = detail::log_histogram_layout;
    if (!r.need(at::store_header_size, name.header)) return false;
    const std::size_t start = r.pos;
    const auto first = static_cast<std::int32_t>(static_cast<std::uint32_t>(r.u(4)));
    const auto n = static_cast<std::uint32_t>(r.u(4));
    const auto bw = static_cast<unsigned>(r.u(1));
    if (bw != 1 && bw != 2 && bw != 4 && bw != 8)
      return r.fail(decode_error::invalid_field, start + at::store_width, name.width);
    if (n == 0) {
      if (first != 0)
        return r.fail(decode_error::invalid_field, start + at::store_first, name.first);
      return true;
    }
    const std::int64_t lo_index = -static_cast<std::int64_t>(h.bias_);
    const std::int64_t hi_index = (std::int64_t{1025} << h.sp_ >> h.sn_);  // above DBL_MAX
    if (first < lo_index || first > hi_index || std::int64_t{first} + n - 1 > hi_index)
      return r.fail(decode_error::invalid_field, start + at::store_first, name.first);
    if (!r.need(std::size_t{n} * bw, name.counts)) return false;
    const std::size_t counts_at = r.pos;
    std::uint64_t widest = 0, last = 0, first_count = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint64_t c = r.u(bw);
      if (i == 0) first_count = c;
      last = c;
      widest = std::max(widest, c);
      if (total + c < total)
        return r.fail(decode_error::inconsistent, counts_at + std::size_t{i} * bw, name.counts);
      total += c;
    }
    if (first_count == 0 || last == 0)  // canonical: trimmed to the non-empty range
      return r.fail(decode_error::invalid_field, counts_at, name.counts);
    const auto u0 = static_cast<std::uint32_t>(first + h.bias_);
    if (!s.reserve(u0, u0 + n - 1, detail::bucket_counts::width_for(widest)))
      return r.fail(decode_error::out_of_memory, counts_at, name.counts);
    r.pos = counts_at;
    for (std::uint32_t i = 0; i < n; ++i) s.add(u0 + i, r.u(bw));
    return true;
  }

  /// The CRC-32 of every byte before it, and nothing after it.
  static bool read_checksum(detail::le_reader& r) noexcept {
    const std::size_t crc_at = r.pos;
    if (!r.need(detail::log_histogram_layout::checksum_size, "checksum")) return false;
    if (static_cast<std::uint32_t>(r.u(4)) != detail::crc32(r.data, crc_at))
      return r.fail(decode_error::checksum_mismatch, crc_at, "checksum");
    if (r.pos != r.size) return r.fail(decode_error::trailing_bytes, r.pos, "end");
    return true;
  }

  /// The counts against the header: they add up to count, min and max lie in the extreme
  /// buckets, and the exact samples (if any) are exactly the bucketed ones.
  static bool settle(detail::le_reader& r, const header& hd, log_histogram& h,
                     std::uint64_t total) {
    namespace at = detail::log_histogram_layout;
    if (total + hd.zero_count < total || total + hd.zero_count != hd.count)
      return r.fail(decode_error::inconsistent, at::count, "count");
    h.count_ = hd.count;
    h.rejected_ = hd.rejected;
    h.zero_count_ = hd.zero_count;
    h.sums_[0] = hd.sum;
    h.min_ = hd.min;
    h.max_ = hd.max;
    if (hd.count != 0 && !h.extremes_consistent())
      return r.fail(decode_error::inconsistent, at::min, "min/max");
    h.sync_fast();
    if (hd.flags != 1) return true;
    log_histogram check(scale_tag{}, hd.scale, hd.zero_threshold);  // may throw bad_alloc
    for (std::uint64_t i = 0; i < hd.count; ++i) check.add(h.exact_[static_cast<std::size_t>(i)]);
    if (!same_counts(check.pos_, h.pos_) || !same_counts(check.neg_, h.neg_) ||
        check.zero_count_ != h.zero_count_ || check.min_ != hd.min || check.max_ != hd.max)
      return r.fail(decode_error::inconsistent, at::header_size, "exact_samples");
    return true;
  }

  /// The largest count in window positions [lo, hi].
  static std::uint64_t widest(const detail::bucket_counts& s, std::uint32_t lo,
                              std::uint32_t hi) noexcept {
    std::uint64_t mx = 0;
    s.with_data([&](const auto* c) {
      for (std::uint32_t p = lo; p <= hi; ++p) mx = std::max<std::uint64_t>(mx, c[p]);
    });
    return mx;
  }
  /// Bytes of one store as serialize_to writes it.
  static std::size_t store_size(const detail::bucket_counts& s) noexcept {
    const std::uint32_t lo = s.next_nonzero(0);
    if (lo == s.size()) return detail::log_histogram_layout::store_header_size;
    const std::uint32_t hi = s.prev_nonzero(s.size());
    return detail::log_histogram_layout::store_header_size +
           std::size_t{hi - lo + 1} * byte_width(widest(s, lo, hi));
  }
  static unsigned byte_width(std::uint64_t mx) noexcept {
    return mx <= 0xFFu ? 1u : mx <= 0xFFFFu ? 2u : mx <= 0xFFFFFFFFu ? 4u : 8u;
  }
  static void write_store(detail::le_writer& w, const detail::bucket_counts& s,
                          std::int32_t bias) noexcept {
    const std::uint32_t lo = s.next_nonzero(0);
    if (lo == s.size()) {
      w.u(0, 4);
      w.u(0, 4);
      w.u8(1);
      return;
    }
    const std::uint32_t hi = s.prev_nonzero(s.size());
    const unsigned bw = byte_width(widest(s, lo, hi));
    w.u(static_cast<std::uint32_t>(static_cast<std::int32_t>(s.first() + lo) - bias), 4);
    w.u(hi - lo + 1, 4);
    w.u8(bw);
    s.with_data([&](const auto* c) {
      // One loop per byte width, so that each writes a fixed number of bytes per counter.
      auto write = [&](auto width) {
        for (std::uint32_t p = lo; p <= hi; ++p) w.u(c[p], decltype(width)::value);
      };
      switch (bw) {
        case 1: write(std::integral_constant<unsigned, 1>{}); break;
        case 2: write(std::integral_constant<unsigned, 2>{}); break;
        case 4: write(std::integral_constant<unsigned, 4>{}); break;
        default: write(std::integral_constant<unsigned, 8>{}); break;
      }
    });
  }
};

inline std::size_t log_histogram::serialized_size() const noexcept {
  namespace at = detail::log_histogram_layout;
  return at::header_size + (is_exact() ? count_ * at::exact_sample_size : 0) +
         wire::store_size(pos_) + wire::store_size(neg_) + at::checksum_size;
}

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
  wire::write_store(w, pos_, bias_);
  wire::write_store(w, neg_, bias_);
  w.u(detail::crc32(out, n - detail::log_histogram_layout::checksum_size), 4);
  return n;
}

inline log_histogram_decoded log_histogram::deserialize(const void* data,
                                                        std::size_t size) noexcept {
  log_histogram_decoded out;
  const auto* bytes = static_cast<const unsigned char*>(data);
  if (bytes == nullptr) size = 0;
  detail::le_reader r{bytes, size, 0, &out};
  wire::header hd;
  if (!wire::read_prefix(r, hd) || !wire::read_scalars(r, hd)) return out;
  TOKCHRON_TRY {
    log_histogram h(scale_tag{}, hd.scale, hd.zero_threshold);
    std::uint64_t total = 0;
    if (wire::read_exact(r, hd, h) && wire::read_store(r, h, h.pos_, wire::positive, total) &&
        wire::read_store(r, h, h.neg_, wire::negative, total) && wire::read_checksum(r) &&
        wire::settle(r, hd, h, total))
      out.histogram.emplace(std::move(h));
  }
  TOKCHRON_CATCH_ALL { r.fail(decode_error::out_of_memory, r.pos, "buckets"); }
  return out;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_QUANTILE_DETAIL_LOG_HISTOGRAM_WIRE_HPP
