// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_IO_DETAIL_TRACE_SCANNER_HPP
#define TOKCHRON_IO_DETAIL_TRACE_SCANNER_HPP

/// \file
/// The fast path of the trace reader: a scanner for the common shape of a trace line, and an
/// exact conversion of plain decimals. Standard library only; io/trace_json_reader.hpp uses it
/// and falls back to nlohmann-json for every line it declines.

#include <cfloat>
#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/io/trace.hpp"

TOKCHRON_BEGIN_NAMESPACE

namespace detail {
/// Converts the JSON number text [b, e) (already checked to be JSON number syntax) exactly as
/// std::from_chars would, quickly, when it is a plain decimal: no exponent, at most 2^53 as an
/// integer once the point is removed, at most 22 digits after the point. Then both the integer
/// and the power of ten are exact doubles, so one IEEE division rounds correctly (Clinger's
/// fast path). Returns false, leaving `out` alone, for anything else.
inline bool plain_decimal(const char* b, const char* e, double& out) noexcept {
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
  static constexpr double pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const bool negative = b < e && *b == '-';
  if (negative) ++b;
  std::uint64_t m = 0;
  int fraction = -1;  // digits after the point; -1 before it
  for (; b < e; ++b) {
    if (*b == '.') {
      fraction = 0;
      continue;
    }
    if (*b < '0' || *b > '9') return false;  // an exponent
    if (m > (std::uint64_t{1} << 53) / 10) return false;
    m = m * 10 + static_cast<std::uint64_t>(*b - '0');
    if (fraction >= 0) ++fraction;
  }
  if (m > (std::uint64_t{1} << 53) || fraction > 22) return false;
  const double v = static_cast<double>(m) / pow10[fraction < 0 ? 0 : fraction];
  out = negative ? -v : v;
  return true;
#else
  (void)b;
  (void)e;
  (void)out;
  return false;  // excess precision would round twice
#endif
}

/// A fast reader for the common shape of a trace line (the known fields, plain ASCII strings
/// without escapes, numbers in JSON syntax). It accepts only input nlohmann-json would read the
/// same way, and declines (returns false) anything else: unknown or repeated fields, escapes,
/// non-ASCII text, unexpected types, syntax errors. Declined lines go through nlohmann-json,
/// which then reports any error. It exists because a 100k-request trace is 240 MB of numbers.
class fast_trace_scanner {
 public:
  explicit fast_trace_scanner(std::string_view s) noexcept
      : p_(s.data()), end_(s.data() + s.size()) {}

  bool record(trace_record& r) {
    ws();
    if (!eat('{')) return false;
    unsigned seen = 0;
    ws();
    if (peek() == '}') return false;  // no send: let the full parser say so
    for (;;) {
      std::string_view key;
      ws();
      if (!string(key)) return false;
      ws();
      if (!eat(':')) return false;
      ws();
      const int k = key_index(key);
      if (k < 0 || (seen & (1u << k))) return false;
      seen |= 1u << k;
      if (!field(k, r)) return false;
      ws();
      if (eat(',')) continue;
      if (eat('}')) break;
      return false;
    }
    ws();
    return p_ == end_ && (seen & required_mask()) == required_mask();
  }

 private:
  static_assert(trace_field_count <= 32, "the scanner keeps the fields seen in 32 bits");
  static int key_index(std::string_view k) noexcept {
    int found = -1;
    for_each_trace_field([&](const auto& fd, std::size_t i) {
      if (fd.name == k) found = static_cast<int>(i);
    });
    return found;
  }
  static unsigned required_mask() noexcept {
    unsigned m = 0;
    for_each_trace_field([&](const auto& fd, std::size_t i) {
      if (fd.required) m |= 1u << i;
    });
    return m;
  }
  [[nodiscard]] char peek() const noexcept { return p_ < end_ ? *p_ : '\0'; }
  bool eat(char c) noexcept {
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }
  void ws() noexcept {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r' || *p_ == '\n')) ++p_;
  }
  bool literal(std::string_view w) noexcept {
    if (static_cast<std::size_t>(end_ - p_) < w.size() || std::string_view(p_, w.size()) != w)
      return false;
    p_ += w.size();
    return true;
  }
  bool string(std::string_view& out) noexcept {
    if (!eat('"')) return false;
    const char* b = p_;
    while (p_ < end_ && *p_ != '"') {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '\\' || c < 0x20 || c >= 0x80) return false;
      ++p_;
    }
    if (p_ == end_) return false;
    out = std::string_view(b, static_cast<std::size_t>(p_ - b));
    ++p_;
    return true;
  }
  /// A JSON number; `integral` is set when it has no fraction or exponent.
  bool number(double& out, bool& integral) noexcept {
    const char* b = p_;
    const char* q = p_;
    if (q < end_ && *q == '-') ++q;
    if (q == end_) return false;
    if (*q == '0') {
      ++q;
    } else if (*q >= '1' && *q <= '9') {
      while (q < end_ && *q >= '0' && *q <= '9') ++q;
    } else {
      return false;
    }
    integral = true;
    if (q < end_ && *q == '.') {
      ++q;
      integral = false;
      if (q == end_ || *q < '0' || *q > '9') return false;
      while (q < end_ && *q >= '0' && *q <= '9') ++q;
    }
    if (q < end_ && (*q == 'e' || *q == 'E')) {
      ++q;
      integral = false;
      if (q < end_ && (*q == '+' || *q == '-')) ++q;
      if (q == end_ || *q < '0' || *q > '9') return false;
      while (q < end_ && *q >= '0' && *q <= '9') ++q;
    }
    if (!plain_decimal(b, q, out)) {  // declines exponents, long mantissas
      const auto res = std::from_chars(b, q, out);
      if (res.ec != std::errc() || res.ptr != q) return false;
    }
    p_ = q;
    return true;
  }
  bool time(double& out) noexcept {
    bool integral = false;
    return number(out, integral);
  }
  /// A non-negative integer written without fraction or exponent, at most `max`.
  bool count(std::uint64_t& out, std::uint64_t max) noexcept {
    const char* q = p_;
    std::uint64_t v = 0;
    if (q == end_ || *q < '0' || *q > '9' ||
        (*q == '0' && q + 1 < end_ && q[1] >= '0' && q[1] <= '9'))
      return false;
    for (; q < end_ && *q >= '0' && *q <= '9'; ++q) {
      const auto d = static_cast<std::uint64_t>(*q - '0');
      if (v > (max - d) / 10) return false;
      v = v * 10 + d;
    }
    if (q < end_ && (*q == '.' || *q == 'e' || *q == 'E')) return false;
    out = v;
    p_ = q;
    return true;
  }
  bool opt_time(std::optional<double>& out) noexcept {
    if (literal("null")) return true;
    double v = 0;
    if (!time(v)) return false;
    out = v;
    return true;
  }
  bool opt_count(std::optional<std::uint64_t>& out) noexcept {
    if (literal("null")) return true;
    std::uint64_t v = 0;
    if (!count(v, std::numeric_limits<std::uint64_t>::max())) return false;
    out = v;
    return true;
  }
  bool chunks(std::vector<trace_chunk>& out) {
    if (!eat('[')) return false;
    ws();
    if (eat(']')) return true;
    for (;;) {
      ws();
      if (!eat('[')) return false;
      trace_chunk c;
      ws();
      if (!time(c.time)) return false;
      ws();
      if (!eat(',')) return false;
      ws();
      std::uint64_t t = 0;
      if (!count(t, std::numeric_limits<std::uint32_t>::max())) return false;
      c.tokens = static_cast<std::uint32_t>(t);
      ws();
      if (eat(',')) {
        ws();
        std::string_view k;
        if (!string(k)) return false;
        const auto kind = parse_chunk_kind(k);
        if (!kind) return false;
        c.kind = *kind;
        ws();
      }
      if (!eat(']')) return false;
      out.push_back(c);
      ws();
      if (eat(',')) continue;
      return eat(']');
    }
  }
  bool times(std::vector<double>& out) {
    if (!eat('[')) return false;
    ws();
    if (eat(']')) return true;
    for (;;) {
      ws();
      double t = 0;
      if (!time(t)) return false;
      out.push_back(t);
      ws();
      if (eat(',')) continue;
      return eat(']');
    }
  }
  /// Reads the value of field `k` of the table into `r`.
  bool field(int k, trace_record& r) {
    bool ok = false;
    for_each_trace_field([&](const auto& fd, std::size_t i) {
      if (static_cast<int>(i) == k) ok = read(r.*fd.member);
    });
    return ok;
  }
  // One reader per member type of the field table. Strings here are ids and messages: a JSON
  // integer id is left to nlohmann-json.
  bool read(std::string& out) {
    if (literal("null")) return true;
    std::string_view sv;
    if (!string(sv)) return false;
    out = std::string(sv);
    return true;
  }
  bool read(double& out) noexcept { return time(out); }
  bool read(std::optional<double>& out) noexcept { return opt_time(out); }
  bool read(std::optional<std::uint64_t>& out) noexcept { return opt_count(out); }
  bool read(std::vector<double>& out) { return literal("null") || times(out); }
  bool read(std::vector<trace_chunk>& out) { return chunks(out); }
  bool read(bool& out) noexcept {
    if (literal("true"))
      out = true;
    else if (literal("false"))
      out = false;
    else
      return literal("null");
    return true;
  }
  bool read(std::optional<finish_reason>& out) noexcept {
    if (literal("null")) return true;
    std::string_view sv;
    if (!string(sv)) return false;
    out = parse_finish_reason(sv);
    return out.has_value();
  }
  bool read(std::optional<usage_source>& out) noexcept {
    if (literal("null")) return true;
    std::string_view sv;
    if (!string(sv)) return false;
    out = parse_usage_source(sv);
    return out.has_value();
  }

  const char* p_;
  const char* end_;
};

}  // namespace detail

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_IO_DETAIL_TRACE_SCANNER_HPP
