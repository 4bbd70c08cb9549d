// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_EXPORT_CSV_HPP
#define TOKCHRON_EXPORT_CSV_HPP

/// \file
/// CSV (RFC 4180) for spreadsheets and plotting: one row per request with every canonical
/// metric, and one row per SLA objective's verdict.
///
/// Times in seconds, rates in tokens/s, numbers in the shortest form that reads back to the same
/// double; an undefined metric is an empty cell (never 0). Text cells holding a comma, quote,
/// CR or LF are quoted, quotes doubled. Lines end in "\r\n" as RFC 4180 says. O(output).
///
/// \code
///   std::string csv = tokchron::request_csv_header();
///   for (auto& [id, tl] : finished) tokchron::append_request_csv(csv, id, tl);
/// \endcode

#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "tokchron/config.hpp"
#include "tokchron/metrics/canonical.hpp"
#include "tokchron/metrics/metric_table.hpp"
#include "tokchron/sla/objective.hpp"
#include "tokchron/sla/verdict.hpp"
#include "tokchron/timeline/event.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// `v` written in full when it is an integer below 2^53 in magnitude (`1000000`, not `1e+06`;
/// every such double is exactly that integer), else empty. The rule of every CSV and table
/// tokchron writes (tokchron-report's too).
[[nodiscard]] inline std::optional<std::string> integer_text(double v) {
  if (!(v == std::floor(v) && std::fabs(v) < 9007199254740992.0)) return std::nullopt;
  return std::to_string(static_cast<long long>(v));
}

namespace detail {
inline void append_csv_text(std::string& out, std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) {
    out += s;
    return;
  }
  out += '"';
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}
/// `v` as `integer_text` writes it, else in the shortest form that reads back exactly; nothing
/// when empty.
inline void append_csv_number(std::string& out, const std::optional<double>& v) {
  if (!v) return;
  if (const auto i = integer_text(*v))
    out += *i;
  else
    out += shortest_number(*v);
}
}  // namespace detail

/// The header of `append_request_csv` rows: id, finish_reason, succeeded, every metric
/// `canonical_metrics` computes (named and ordered as in metric_table), output_tokens,
/// prompt_tokens, preemptions.
[[nodiscard]] inline std::string request_csv_header() {
  std::string h = "id,finish_reason,succeeded";
  for (const auto& m : metric_table) {
    if (!request_metrics::canonical_field(m.id)) continue;
    h += ',';
    h += m.name;
  }
  h += ",output_tokens,prompt_tokens,preemptions\r\n";
  return h;
}

/// Appends one request's row: `id`, its finish reason (empty if unfinished) and every field of
/// `request_metrics`.
inline void append_request_csv(std::string& out, std::string_view id, const request_metrics& m,
                               std::optional<finish_reason> reason) {
  detail::append_csv_text(out, id);
  out += ',';
  if (reason) out += to_string(*reason);
  out += m.succeeded ? ",1" : ",0";
  for (const auto& d : metric_table) {
    const auto field = request_metrics::canonical_field(d.id);
    if (!field) continue;
    out += ',';
    detail::append_csv_number(out, m.*field);
  }
  out += ',';
  out += std::to_string(m.output_tokens);
  out += ',';
  if (m.prompt_tokens) out += std::to_string(*m.prompt_tokens);
  out += ',';
  out += std::to_string(m.preemptions);
  out += "\r\n";
}

/// Appends the row of a timeline (its canonical metrics).
template <class Timeline>
void append_request_csv(std::string& out, std::string_view id, const Timeline& tl) {
  append_request_csv(out, id, canonical_metrics(tl), tl.reason());
}

/// The header of `append_verdict_csv` rows.
[[nodiscard]] inline std::string verdict_csv_header() {
  return "objective,metric,status,threshold,measured,margin,lower,upper,confidence,samples,"
         "misses\r\n";
}

/// Appends one row per verdict of `v` (values in the metric's base unit; an unbounded
/// confidence bound is an empty cell).
inline void append_verdict_csv(std::string& out, const sla_verdict& v) {
  auto bound = [](double b) -> std::optional<double> {
    if (!std::isfinite(b)) return std::nullopt;
    return b;
  };
  for (const auto& x : v.verdicts) {
    detail::append_csv_text(out, x.target.to_string());
    out += ',';
    out += to_string(x.target.metric);
    out += ',';
    out += to_string(x.status);
    out += ',';
    detail::append_csv_number(out, x.target.threshold);
    out += ',';
    detail::append_csv_number(out, x.measured);
    out += ',';
    detail::append_csv_number(out, x.margin);
    out += ',';
    detail::append_csv_number(out, bound(x.lower));
    out += ',';
    detail::append_csv_number(out, bound(x.upper));
    out += ',';
    detail::append_csv_number(out, x.confidence);
    out += ',';
    out += std::to_string(x.samples);
    out += ',';
    if (x.misses) out += std::to_string(*x.misses);
    out += "\r\n";
  }
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_EXPORT_CSV_HPP
