// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_EXPORT_PROMETHEUS_HPP
#define TOKCHRON_EXPORT_PROMETHEUS_HPP

/// \file
/// Prometheus text exposition (format 0.0.4) and OpenMetrics 1.0 text of a `metrics_snapshot`.
///
/// \code
///   tokchron::metrics_snapshot s;
///   s.family("tokchron_requests", "Finished requests.", tokchron::metric_kind::counter)
///       .add(42, {{"outcome", "stop"}});
///   std::string text = tokchron::to_prometheus(s);  // serve with prometheus_content_type
/// \endcode
///
/// Output: `# HELP` and `# TYPE` per family, counters with the `_total` suffix, histograms as
/// `_bucket{le=...}` (cumulative, ending in `le="+Inf"`), `_sum`, `_count`; label values
/// escaped (`\\`, `\"`, `\n`). Numbers are written with 16 significant digits, `+Inf`, `-Inf`,
/// `NaN`: the same text prometheus-cpp writes, so `le` labels agree when a fleet mixes
/// replicas exporting through tokchron and through prometheus-cpp (PromQL sums buckets by the
/// `le` string). Invalid metric or label names, a reserved `le` label on a histogram, unordered
/// buckets or a family name that does not end in its unit throw std::invalid_argument, naming
/// the offender; nothing is written then. Complexity: linear in the output size.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

#include "tokchron/config.hpp"
#include "tokchron/exposition/snapshot_data.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// The HTTP Content-Type of `to_prometheus` output.
inline constexpr std::string_view prometheus_content_type =
    "text/plain; version=0.0.4; charset=utf-8";
/// The HTTP Content-Type of OpenMetrics output (`prometheus_options::openmetrics`).
inline constexpr std::string_view openmetrics_content_type =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// How to write an exposition.
struct prometheus_options {
  /// OpenMetrics 1.0 instead of the 0.0.4 text format: `# TYPE`/`# HELP` name the family
  /// (counters without `_total`), `# UNIT` lines where a family has a unit, `# EOF` at the end.
  bool openmetrics = false;
  /// Labels put first on every sample (e.g. `{"model", "llama-3-8b"}`).
  label_set const_labels;
};

namespace detail {
[[nodiscard]] constexpr bool is_metric_name_char(char c, bool first) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         (!first && c >= '0' && c <= '9');
}
[[nodiscard]] constexpr bool valid_metric_name(std::string_view n) noexcept {
  if (n.empty()) return false;
  for (std::size_t i = 0; i < n.size(); ++i)
    if (!is_metric_name_char(n[i], i == 0)) return false;
  return true;
}
[[nodiscard]] constexpr bool valid_label_name(std::string_view n) noexcept {
  if (n.empty() || n.substr(0, 2) == "__") return false;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

[[noreturn]] inline void throw_exposition_error(std::string_view what, std::string_view name) {
  std::string msg = "tokchron: prometheus exposition: ";
  msg += what;
  msg += " \"";
  msg += name;
  msg += '"';
  TOKCHRON_THROW(std::invalid_argument, msg.c_str());
#if !TOKCHRON_HAS_EXCEPTIONS
  std::abort();
#endif
}

inline void check_labels(const label_set& labels, bool histogram, std::string_view family) {
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (!valid_label_name(labels[i].name))
      throw_exposition_error("invalid label name", labels[i].name);
    if (histogram && labels[i].name == "le")
      throw_exposition_error("the label \"le\" is reserved in histogram", family);
    for (std::size_t j = 0; j < i; ++j)
      if (labels[j].name == labels[i].name)
        throw_exposition_error("duplicate label name", labels[i].name);
  }
}

inline void check_family(const metric_family& f, const prometheus_options& o) {
  if (!valid_metric_name(f.name)) throw_exposition_error("invalid metric name", f.name);
  if (!f.unit.empty()) {
    const std::string suffix = "_" + f.unit;
    if (f.name.size() <= suffix.size() ||
        f.name.compare(f.name.size() - suffix.size(), suffix.size(), suffix) != 0)
      throw_exposition_error("the family name must end in \"_<unit>\"", f.name);
  }
  if (f.kind == metric_kind::counter && f.name.size() >= 6 &&
      f.name.compare(f.name.size() - 6, 6, "_total") == 0)
    throw_exposition_error("a counter family's name must not end in _total (it is added)", f.name);
  for (const auto& p : f.points) {
    check_labels(p.labels, f.kind == metric_kind::histogram, f.name);
    for (const auto& c : o.const_labels)
      for (const auto& l : p.labels)
        if (l.name == c.name) throw_exposition_error("label repeats a constant label", l.name);
    if (f.kind != metric_kind::histogram) continue;
    const auto& b = p.histogram.buckets;
    for (std::size_t i = 0; i < b.size(); ++i) {
      if (!std::isfinite(b[i].upper_bound) || (i > 0 && !(b[i].upper_bound > b[i - 1].upper_bound)))
        throw_exposition_error("histogram bounds must be finite and strictly increasing in",
                               f.name);
      if ((i > 0 && b[i].cumulative_count < b[i - 1].cumulative_count) ||
          b[i].cumulative_count > p.histogram.count)
        throw_exposition_error("histogram cumulative counts must not decrease in", f.name);
    }
  }
  check_labels(o.const_labels, f.kind == metric_kind::histogram, f.name);
}

/// Appends a number as Prometheus (and prometheus-cpp) write it: 16 significant digits.
inline void append_prometheus_number(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[32];
    const int n = std::snprintf(buf, sizeof buf, "%.16g", v);
    out.append(buf, static_cast<std::size_t>(n));
  }
}
inline void append_prometheus_number(std::string& out, std::uint64_t v) {
  out += std::to_string(v);
}

/// Label values escape backslash, double quote and newline; HELP text (0.0.4) backslash and
/// newline, OpenMetrics HELP also the double quote.
inline void append_escaped(std::string& out, std::string_view s, bool quote) {
  for (const char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '"':
        if (quote)
          out += "\\\"";
        else
          out += c;
        break;
      default: out += c;
    }
  }
}

inline void append_labels(std::string& out, const label_set& consts, const label_set& labels,
                          const char* le) {
  if (consts.empty() && labels.empty() && le == nullptr) return;
  out += '{';
  bool first = true;
  auto one = [&](std::string_view name, std::string_view value) {
    if (!first) out += ',';
    first = false;
    out += name;
    out += "=\"";
    append_escaped(out, value, true);
    out += '"';
  };
  for (const auto& l : consts) one(l.name, l.value);
  for (const auto& l : labels) one(l.name, l.value);
  if (le != nullptr) one("le", le);
  out += '}';
}

inline void append_family(std::string& out, const metric_family& f, const prometheus_options& o) {
  const bool om = o.openmetrics;
  const bool counter = f.kind == metric_kind::counter;
  const bool total = counter && (om || f.total_suffix);
  // 0.0.4 names the counter's sample (with _total) in HELP/TYPE; OpenMetrics names the family.
  const std::string typed = total && !om ? f.name + "_total" : f.name;
  out += "# HELP ";
  out += typed;
  out += ' ';
  append_escaped(out, f.help, om);
  out += "\n# TYPE ";
  out += typed;
  out += ' ';
  out += to_string(f.kind);
  out += '\n';
  if (om && !f.unit.empty()) {
    out += "# UNIT ";
    out += f.name;
    out += ' ';
    out += f.unit;
    out += '\n';
  }
  for (const auto& p : f.points) {
    // One sample line: name + suffix, labels (and le), value.
    auto sample = [&](const char* suffix, const char* le, auto value) {
      out += f.name;
      out += suffix;
      append_labels(out, o.const_labels, p.labels, le);
      out += ' ';
      append_prometheus_number(out, value);
      out += '\n';
    };
    if (f.kind != metric_kind::histogram) {
      sample(total ? "_total" : "", nullptr, p.value);
      continue;
    }
    std::string le;
    for (const auto& b : p.histogram.buckets) {
      le.clear();
      append_prometheus_number(le, b.upper_bound);
      sample("_bucket", le.c_str(), b.cumulative_count);
    }
    sample("_bucket", "+Inf", p.histogram.count);
    sample("_sum", nullptr, p.histogram.sum);
    sample("_count", nullptr, p.histogram.count);
  }
}
}  // namespace detail

/// Appends the exposition of `s` to `out`. Validates the whole snapshot first (throws
/// std::invalid_argument naming the offending name; `out` is then unchanged). Families with no
/// points still get their HELP/TYPE lines. A family name must not repeat.
inline void write_prometheus(std::string& out, const metrics_snapshot& s,
                             const prometheus_options& o = {}) {
  for (std::size_t i = 0; i < s.families.size(); ++i) {
    detail::check_family(s.families[i], o);
    for (std::size_t j = 0; j < i; ++j)
      if (s.families[j].name == s.families[i].name)
        detail::throw_exposition_error("duplicate metric family", s.families[i].name);
  }
  for (const auto& f : s.families) detail::append_family(out, f, o);
  if (o.openmetrics) out += "# EOF\n";
}

/// The exposition of `s` as a string (see `write_prometheus`).
[[nodiscard]] inline std::string to_prometheus(const metrics_snapshot& s,
                                               const prometheus_options& o = {}) {
  std::string out;
  write_prometheus(out, s, o);
  return out;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_EXPORT_PROMETHEUS_HPP
