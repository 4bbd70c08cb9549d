// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_DETAIL_DECIMAL_HPP
#define TOKCHRON_DETAIL_DECIMAL_HPP

/// \file
/// Internals: whether a decimal literal is the value it is read as. A `double` holds about 16
/// significant digits, so a literal with more may be read as another value:
/// `99.99999999999999999999` is read as 100, which as a percentile is the maximum.
/// `reads_back(text, v)` is true when the shortest text that reads back as `v` (`std::to_chars`) is
/// the literal itself, up to leading and trailing zeros and the exponent's spelling: every literal
/// of at most 15 significant digits passes (DBL_DIG), and so does every shortest form
/// (`0.30000000000000004`). Not part of the API. Never allocates, never throws.

#include <charconv>
#include <cstddef>
#include <string_view>
#include <system_error>

#include "tokchron/config.hpp"

TOKCHRON_BEGIN_NAMESPACE
namespace detail {

/// A decimal's significant digits (no leading or trailing zeros; at most 17 kept) and the power
/// of ten of its last one: value = digits x 10^scale. `ok` is false when it has more than 17
/// significant digits (no double's shortest form has more) or is not a plain decimal.
struct decimal_digits {
  char digits[17] = {};
  std::size_t n = 0;
  long long scale = 0;
  bool negative = false;  ///< (a zero has no sign)
  bool ok = false;
};

/// The digits of `s`: `[-][digits][.digits][(e|E)[+|-]digits]`.
[[nodiscard]] inline decimal_digits decimal_digits_of(std::string_view s) noexcept {
  decimal_digits d;
  std::size_t i = 0;
  if (!s.empty() && s[0] == '-') {
    d.negative = true;
    i = 1;
  }
  long long frac = 0;     // digits after the point, counted while significant digits are kept
  std::size_t zeros = 0;  // zeros seen after the last non-zero digit, not yet kept
  bool point = false, any = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.' && !point) {
      point = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    any = true;
    if (point) ++frac;
    if (c == '0') {
      if (d.n > 0) ++zeros;  // a leading zero is no digit
      continue;
    }
    if (d.n + zeros + 1 > sizeof d.digits) return d;  // more than 17 significant digits
    for (; zeros > 0; --zeros) d.digits[d.n++] = '0';
    d.digits[d.n++] = c;
  }
  if (!any) return d;
  long long exp = 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool neg = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    if (i == s.size()) return d;
    for (; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') return d;
      if (exp < 100000) exp = exp * 10 + (s[i] - '0');  // far past any double's range
    }
    if (neg) exp = -exp;
  } else if (i != s.size()) {
    return d;
  }
  // value = digits x 10^(exp - frac) x 10^zeros (the trailing zeros dropped)
  d.scale = exp - frac + static_cast<long long>(zeros);
  if (d.n == 0) {  // zero
    d.scale = 0;
    d.negative = false;
  }
  d.ok = true;
  return d;
}

/// True when `v`, read from the decimal `text`, is what `text` says: the shortest text of `v`
/// has the same significant digits and scale. False for a literal whose digits a double cannot
/// hold (more than 17 significant digits, or a value between two doubles that is neither's
/// shortest form), and for a non-finite `v`.
[[nodiscard]] inline bool reads_back(std::string_view text, double v) noexcept {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  if (r.ec != std::errc()) return false;
  const std::string_view shortest(buf, static_cast<std::size_t>(r.ptr - buf));
  const decimal_digits a = decimal_digits_of(text), b = decimal_digits_of(shortest);
  if (!a.ok || !b.ok || a.n != b.n || a.scale != b.scale || a.negative != b.negative) return false;
  for (std::size_t i = 0; i < a.n; ++i)
    if (a.digits[i] != b.digits[i]) return false;
  return true;
}

}  // namespace detail
TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_DETAIL_DECIMAL_HPP
