// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_SLA_OBJECTIVE_HPP
#define TOKCHRON_SLA_OBJECTIVE_HPP

/// \file
/// Service-level objectives: a metric, a statistic, a comparator and a threshold with units,
/// parsed from text such as `p95(ttft) < 1.5s`; an SLA is a set of them.
///
/// Grammar (spaces allowed between parts, case-sensitive):
///
///     objective  := statistic "(" metric ")" comparator number [unit]
///     statistic  := "p" number (0..100) | "median" | "mean" | "avg" | "max" | "min"
///     metric     := a name or alias from metric_table (metrics/metric_table.hpp), e.g. ttft, itl,
///                   e2e (alias e2el), queue_time (alias queue), output_rate, fluidity
///     comparator := "<" | "<=" | ">" | ">="
///     unit       := time metrics: "s" | "ms" | "us" | "µs" | "ns" | "min" (required);
///                   output_rate: none | "tok/s" | "tokens/s" | "/s"; fluidity: none
///
/// The statistic is applied to the metric's distribution, then compared: `p90(output_rate) > 10`
/// says the 90th percentile of per-request rates exceeds 10; "90% of requests get more than 10
/// tokens/s" is `p10(output_rate) > 10`. Thresholds are stored in seconds (time metrics),
/// tokens per second, or the unitless fluidity index. `parse_objective` never throws and never
/// allocates (a fuzzing entry point); `objective::parse` throws `std::invalid_argument` naming the
/// offending part.

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/detail/decimal.hpp"
#include "tokchron/metrics/metric_table.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// What an objective measures: any metric of the table (metrics/metric_table.hpp), per request
/// except `itl` (one sample per output token gap).
using slo_metric = metric_id;
/// The number of `slo_metric` values (for arrays indexed by metric).
inline constexpr std::size_t slo_metric_count = metric_count;

/// The statistic an objective takes of the metric's distribution.
enum class slo_statistic : std::uint8_t {
  percentile,  ///< the `objective::percentile`-th percentile (judged with a confidence interval)
  mean,        ///< the mean
  max,         ///< the largest observed sample
  min,         ///< the smallest observed sample
};

/// How the statistic is compared with the threshold.
enum class slo_comparator : std::uint8_t { less, less_equal, greater, greater_equal };

/// The comparator's symbol ("<", "<=", ">", ">=").
[[nodiscard]] constexpr std::string_view to_string(slo_comparator c) noexcept {
  switch (c) {
    case slo_comparator::less: return "<";
    case slo_comparator::less_equal: return "<=";
    case slo_comparator::greater: return ">";
    case slo_comparator::greater_equal: return ">=";
  }
  return "?";
}

class objective;

/// Why a text did not parse: where (byte offset and length of the offending part in the text)
/// and what (a static message). `message` is empty when there is no error.
struct parse_error {
  std::size_t offset = 0;
  std::size_t length = 0;
  std::string_view message;
  [[nodiscard]] explicit operator bool() const noexcept { return !message.empty(); }
  /// The offending part of `text` (the text this error was produced for).
  [[nodiscard]] std::string_view part(std::string_view text) const noexcept {
    if (offset >= text.size()) return {};
    return text.substr(offset, length);
  }
};

/// One service-level objective, e.g. `p95(ttft) < 1.5s`.
///
/// Thresholds are in seconds for time metrics. `display_scale` only says how `to_string` prints
/// the threshold (1e-3 prints milliseconds); it does not take part in comparisons.
class objective {
 public:
  slo_metric metric = slo_metric::ttft;
  slo_statistic statistic = slo_statistic::percentile;
  double percentile = 99;  ///< in [0, 100]; used when statistic == percentile
  slo_comparator comparator = slo_comparator::less;
  double threshold = 0;      ///< seconds, tokens/s or fluidity index
  double display_scale = 1;  ///< seconds per printed unit: 1, 1e-3, 1e-6, 1e-9 or 60

  objective() = default;
  objective(slo_metric m, slo_statistic s, double pct, slo_comparator c, double thr) noexcept
      : metric(m), statistic(s), percentile(pct), comparator(c), threshold(thr) {
    if (is_time_metric(m) && thr != 0 && std::fabs(thr) < 1) display_scale = 1e-3;
  }

  /// Parses `text`; throws std::invalid_argument naming the offending part.
  [[nodiscard]] static objective parse(std::string_view text);

  /// True when the statistic should stay below the threshold (`<`, `<=`).
  [[nodiscard]] constexpr bool upper_bound() const noexcept {
    return comparator == slo_comparator::less || comparator == slo_comparator::less_equal;
  }
  /// True when `value` satisfies the comparison (false for NaN).
  [[nodiscard]] constexpr bool holds(double value) const noexcept {
    switch (comparator) {
      case slo_comparator::less: return value < threshold;
      case slo_comparator::less_equal: return value <= threshold;
      case slo_comparator::greater: return value > threshold;
      case slo_comparator::greater_equal: return value >= threshold;
    }
    return false;
  }
  /// The percentile as a probability (percentile / 100).
  [[nodiscard]] constexpr double quantile() const noexcept { return percentile / 100.0; }
  /// The statistic's name: "p95", "p99.9", "mean", "max", "min".
  [[nodiscard]] std::string statistic_name() const;
  /// The canonical text (the metric's one name), which parses back to an equal objective:
  /// "p95(ttft) < 1.5s".
  [[nodiscard]] std::string to_string() const;
  /// The threshold in its display unit with the unit: "1.5s", "200ms", "10tok/s", "0.9".
  [[nodiscard]] std::string threshold_string() const { return format_value(threshold, true); }
  /// `v` (in the metric's base unit) printed in the display unit with 6 significant digits, or
  /// exactly (shortest round-trip text) when `exact`: "85ms".
  [[nodiscard]] std::string format_value(double v, bool exact = false) const;

  friend bool operator==(const objective& a, const objective& b) noexcept {
    return a.metric == b.metric && a.statistic == b.statistic &&
           (a.statistic != slo_statistic::percentile || a.percentile == b.percentile) &&
           a.comparator == b.comparator && a.threshold == b.threshold;
  }
  friend bool operator!=(const objective& a, const objective& b) noexcept { return !(a == b); }
};

/// The result of `parse_objective`: the objective, or an error naming the offending part.
struct objective_parse_result {
  objective value;
  parse_error error;
  [[nodiscard]] explicit operator bool() const noexcept { return !error; }
};

namespace detail {
[[nodiscard]] constexpr bool is_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}
[[nodiscard]] constexpr bool is_ident(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/// A cursor over the text being parsed.
struct spec_cursor {
  std::string_view text;
  std::size_t pos = 0;
  void skip_space() noexcept {
    while (pos < text.size() && is_space(text[pos])) ++pos;
  }
  [[nodiscard]] bool at_end() const noexcept { return pos >= text.size(); }
  [[nodiscard]] char peek() const noexcept { return at_end() ? '\0' : text[pos]; }
  [[nodiscard]] std::string_view rest() const noexcept { return text.substr(pos); }
};

/// Parses a finite non-negative decimal number (no sign, no hex, no inf/nan).
[[nodiscard]] inline std::optional<double> parse_plain_number(std::string_view s,
                                                              std::size_t& used) noexcept {
  std::size_t i = 0;
  bool digits = false;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, digits = true;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, digits = true;
  }
  if (!digits) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    std::size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    const std::size_t exp_start = j;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
    if (j > exp_start) i = j;  // otherwise the 'e' belongs to what follows
  }
  double v = 0;
  const auto r = std::from_chars(s.data(), s.data() + i, v, std::chars_format::general);
  if (r.ec != std::errc() || r.ptr != s.data() + i || !std::isfinite(v)) return std::nullopt;
  used = i;
  return v;
}

/// The shortest text of v that reads back as v (fixed or scientific, whichever is shorter).
inline std::string shortest_number(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}
}  // namespace detail

/// Parses one objective such as `p99(tpot) <= 200ms`. Never throws, never allocates: on error
/// `result.error` gives the offset and length of the offending part and a static message.
/// Complexity: linear in the text.
[[nodiscard]] inline objective_parse_result parse_objective(std::string_view text) noexcept {
  objective_parse_result r;
  objective& o = r.value;
  detail::spec_cursor c{text};
  auto fail = [&](std::size_t at, std::size_t len, std::string_view msg) {
    r.error = parse_error{at, len, msg};
    return r;
  };
  auto ident_len = [&](std::size_t from) {
    std::size_t i = from;
    while (i < text.size() && detail::is_ident(text[i])) ++i;
    return i - from;
  };

  c.skip_space();
  if (c.at_end()) return fail(0, text.size(), "empty objective");
  // statistic
  {
    const std::size_t start = c.pos;
    const std::size_t len = ident_len(start);
    // a percentile may carry a fraction: p99.9
    std::size_t stat_len = len;
    if (len > 0 && text[start] == 'p' && start + len < text.size() && text[start + len] == '.')
      stat_len = len + 1 + ident_len(start + len + 1);
    const std::string_view word = text.substr(start, stat_len);
    if (word.empty())
      return fail(start, 1, "expected a statistic (p95, p99.9, median, mean, max, min)");
    if (word == "mean" || word == "avg") {
      o.statistic = slo_statistic::mean;
    } else if (word == "max") {
      o.statistic = slo_statistic::max;
    } else if (word == "min") {
      o.statistic = slo_statistic::min;
    } else if (word == "median") {
      o.statistic = slo_statistic::percentile;
      o.percentile = 50;
    } else if (word[0] == 'p') {
      std::size_t used = 0;
      const auto p = detail::parse_plain_number(word.substr(1), used);
      if (!p || used != word.size() - 1)
        return fail(start, word.size(), "bad percentile: expected p followed by a number");
      if (*p > 100) return fail(start, word.size(), "percentile must be between 0 and 100");
      if (!detail::reads_back(word.substr(1), *p))
        return fail(start, word.size(),
                    "percentile has more digits than a double holds: it would be read as "
                    "another number (p99.99999999999999999999 as p100, the maximum)");
      o.statistic = slo_statistic::percentile;
      o.percentile = *p;
    } else {
      return fail(start, word.size(),
                  "unknown statistic: expected pN (p95, p99.9), median, mean, max or min");
    }
    c.pos = start + stat_len;
  }
  c.skip_space();
  if (c.peek() != '(') return fail(c.pos, c.at_end() ? 0 : 1, "expected '(' after the statistic");
  ++c.pos;
  c.skip_space();
  {
    const std::size_t start = c.pos;
    const std::size_t len = ident_len(start);
    if (len == 0) return fail(start, c.at_end() ? 0 : 1, "expected a metric name");
    const auto m = metric_from_name(text.substr(start, len));
    if (!m) return fail(start, len, detail::unknown_metric_text.view());
    o.metric = *m;
    c.pos = start + len;
  }
  c.skip_space();
  if (c.peek() != ')') return fail(c.pos, c.at_end() ? 0 : 1, "expected ')' after the metric");
  ++c.pos;
  c.skip_space();
  {
    const std::size_t start = c.pos;
    const char ch = c.peek();
    if (ch != '<' && ch != '>')
      return fail(start, c.at_end() ? 0 : 1, "expected a comparator: <, <=, > or >=");
    ++c.pos;
    const bool eq = c.peek() == '=';
    if (eq) ++c.pos;
    o.comparator = ch == '<' ? (eq ? slo_comparator::less_equal : slo_comparator::less)
                             : (eq ? slo_comparator::greater_equal : slo_comparator::greater);
  }
  c.skip_space();
  {
    const std::size_t start = c.pos;
    if (c.peek() == '-') return fail(start, 1, "threshold must not be negative");
    std::size_t used = 0;
    const auto v = detail::parse_plain_number(c.rest(), used);
    if (!v) {
      std::size_t len = 0;
      while (start + len < text.size() && !detail::is_space(text[start + len])) ++len;
      return fail(start, len, "expected a threshold number");
    }
    if (!detail::reads_back(c.rest().substr(0, used), *v))
      return fail(start, used,
                  "threshold has more digits than a double holds: it would be read as another "
                  "number");
    o.threshold = *v;
    c.pos = start + used;
  }
  c.skip_space();
  {
    const std::size_t start = c.pos;
    std::size_t len = 0;
    while (start + len < text.size() && !detail::is_space(text[start + len])) ++len;
    const std::string_view unit = text.substr(start, len);
    double scale = 0;
    if (is_time_metric(o.metric)) {
      if (unit == "s" || unit == "sec")
        scale = 1;
      else if (unit == "ms")
        scale = 1e-3;
      else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs")
        scale = 1e-6;
      else if (unit == "ns")
        scale = 1e-9;
      else if (unit == "min")
        scale = 60;
      else if (unit.empty())
        return fail(start, 0, "a time threshold needs a unit: s, ms, us, ns or min");
      else
        return fail(start, len, "unknown time unit: expected s, ms, us, ns or min");
      o.threshold *= scale;
      o.display_scale = scale;
    } else if (info(o.metric).unit == metric_unit::tokens_per_second) {
      if (!(unit.empty() || unit == "tok/s" || unit == "tokens/s" || unit == "/s"))
        return fail(start, len, "unknown rate unit: expected tok/s, tokens/s, /s or none");
      o.display_scale = 1;
    } else {
      if (!unit.empty()) return fail(start, len, "the fluidity index takes no unit");
      if (o.metric == slo_metric::fluidity && o.threshold > 1)
        return fail(start, len, "a fluidity index threshold is at most 1");
      o.display_scale = 1;
    }
    c.pos = start + len;
  }
  c.skip_space();
  if (!c.at_end()) return fail(c.pos, text.size() - c.pos, "unexpected text after the objective");
  return r;
}

namespace detail {
[[noreturn]] inline void throw_parse_error(std::string_view what, std::string_view text,
                                           const parse_error& e) {
  std::string msg = "tokchron: bad ";
  msg += what;
  msg += " \"";
  msg += text;
  msg += "\": ";
  msg += e.message;
  const std::string_view part = e.part(text);
  if (!part.empty()) {
    msg += " (at '";
    msg += part;
    msg += "')";
  } else {
    msg += " (at the end)";
  }
  TOKCHRON_THROW(std::invalid_argument, msg);
#if !TOKCHRON_HAS_EXCEPTIONS
  std::abort();
#endif
}
}  // namespace detail

inline objective objective::parse(std::string_view text) {
  objective_parse_result r = parse_objective(text);
  if (!r) detail::throw_parse_error("objective", text, r.error);
  return r.value;
}

inline std::string objective::statistic_name() const {
  switch (statistic) {
    case slo_statistic::mean: return "mean";
    case slo_statistic::max: return "max";
    case slo_statistic::min: return "min";
    case slo_statistic::percentile: break;
  }
  return "p" + detail::shortest_number(percentile);
}

inline std::string objective::format_value(double v, bool exact) const {
  if (!std::isfinite(v)) return v > 0 ? "inf" : (v < 0 ? "-inf" : "nan");
  auto num = [exact](double x) {
    if (exact) return detail::shortest_number(x);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", x);
    return std::string(buf);
  };
  if (is_time_metric(metric)) {
    double scale = display_scale;
    const char* unit = "s";
    if (scale == 1e-3)
      unit = "ms";
    else if (scale == 1e-6)
      unit = "us";
    else if (scale == 1e-9)
      unit = "ns";
    else if (scale == 60)
      unit = "min";
    else
      scale = 1;  // seconds for any other scale
    // Exact text must parse back to v (the parser multiplies by the scale): where v / scale *
    // scale rounds elsewhere (3e-32 s is 2.9999999999999997e-29 ms), print seconds instead.
    if (exact && scale != 1 && (v / scale) * scale != v) {
      scale = 1;
      unit = "s";
    }
    return num(v / scale) + unit;
  }
  if (info(metric).unit == metric_unit::tokens_per_second) return num(v) + "tok/s";
  return num(v);
}

inline std::string objective::to_string() const {
  std::string s = statistic_name();
  s += '(';
  s += tokchron::to_string(metric);
  s += ") ";
  s += tokchron::to_string(comparator);
  s += ' ';
  s += threshold_string();
  return s;
}

/// A service-level agreement: objectives that must all hold.
struct sla {
  std::vector<objective> objectives;

  /// Parses objectives separated by ',', ';' or the word "and": "p95(ttft) < 1.5s, p95(tpot) <
  /// 100ms". Throws std::invalid_argument naming the offending objective and part.
  [[nodiscard]] static sla parse(std::string_view text);
};

/// The result of `parse_sla`: the objectives, or the first error (offsets into the whole text).
struct sla_parse_result {
  sla value;
  parse_error error;
  [[nodiscard]] explicit operator bool() const noexcept { return !error; }
};

/// Parses a comma-, semicolon- or "and"-separated list of objectives. Never throws: allocation
/// failure is reported as an error.
[[nodiscard]] inline sla_parse_result parse_sla(std::string_view text) noexcept {
  sla_parse_result r;
  std::size_t start = 0;
  auto emit = [&](std::size_t from, std::size_t to) -> bool {
    const std::string_view piece = text.substr(from, to - from);
    objective_parse_result one = parse_objective(piece);
    if (!one) {
      r.error = one.error;
      r.error.offset += from;
      return false;
    }
    TOKCHRON_TRY { r.value.objectives.push_back(one.value); }
    TOKCHRON_CATCH_ALL {
      r.error = parse_error{from, to - from, "out of memory"};
      return false;
    }
    return true;
  };
  for (;;) {
    std::size_t sep = text.size(), sep_len = 0;
    for (std::size_t j = start; j < text.size(); ++j) {
      if (text[j] == ',' || text[j] == ';') {
        sep = j;
        sep_len = 1;
        break;
      }
      if (j > start && detail::is_space(text[j - 1]) && text.compare(j, 3, "and") == 0 &&
          j + 3 < text.size() && detail::is_space(text[j + 3])) {
        sep = j;
        sep_len = 3;
        break;
      }
    }
    if (!emit(start, sep)) return r;
    if (sep == text.size()) break;
    start = sep + sep_len;
  }
  if (r.value.objectives.empty() && !r.error) r.error = parse_error{0, 0, "empty SLA"};
  return r;
}

inline sla sla::parse(std::string_view text) {
  sla_parse_result r = parse_sla(text);
  if (!r) detail::throw_parse_error("SLA", text, r.error);
  return std::move(r.value);
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_SLA_OBJECTIVE_HPP
