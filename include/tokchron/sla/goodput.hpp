// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_SLA_GOODPUT_HPP
#define TOKCHRON_SLA_GOODPUT_HPP

/// \file
/// Goodput: requests per second that meet per-request SLOs, and DistServe's goodput (the highest
/// request rate whose SLO attainment stays at or above a target).
///
/// A request is *good* when it succeeded and every limit set in `request_slo` holds with
/// value <= limit (vLLM and GenAI-Perf both treat a value equal to the limit as good). A limit on
/// a metric the request does not define (TPOT of a 1-token response) follows the tool's rule:
/// vLLM counts the missing TPOT as 0, so it meets the limit (`missing_metric_rule::met`); AIPerf
/// makes the request not good (`missing_metric_rule::not_good`); GuideLLM leaves the request out
/// of the population, neither good nor counted (`missing_metric_rule::excluded`). Attainment =
/// good / the finished requests not left out (failed ones count as not good); goodput = good /
/// duration (the tools' figure at one load point); token goodput = the prompt and output tokens
/// of the good requests / duration (inference-perf's), output token goodput = their output tokens
/// / duration (GuideLLM's). Requests the run itself cut short (in flight when it stopped
/// measuring: GuideLLM's "incomplete") are the caller's to leave out: they are never added.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/metrics/builtin_profiles.hpp"
#include "tokchron/metrics/canonical.hpp"
#include "tokchron/metrics/run_summary.hpp"
#include "tokchron/sla/objective.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// Per-request limits in seconds; an unset limit is not checked.
struct request_slo {
  std::optional<double> ttft_s;
  std::optional<double> tpot_s;
  std::optional<double> e2e_s;
  /// Limits on the other per-request time metrics of metric_table (`ttfa`, `reasoning_time`,
  /// `ttst`, `queue_time`, ...), indexed by `metric_id`; ttft, tpot and e2e use the fields above.
  std::array<std::optional<double>, metric_count> other{};

  /// Whether metric `m` can take a per-request limit: a time metric that `request_metrics`
  /// holds (not the pooled itl and icl).
  [[nodiscard]] static constexpr bool limitable(metric_id m) noexcept {
    return is_time_metric(m) && request_metrics::canonical_field(m) != nullptr;
  }
  /// The limit on `m` (seconds), if set.
  [[nodiscard]] const std::optional<double>& limit(metric_id m) const noexcept {
    if (m == metric_id::ttft) return ttft_s;
    if (m == metric_id::tpot) return tpot_s;
    if (m == metric_id::e2e) return e2e_s;
    return other[static_cast<std::size_t>(m)];
  }
  [[nodiscard]] std::optional<double>& limit(metric_id m) noexcept {
    return const_cast<std::optional<double>&>(std::as_const(*this).limit(m));
  }

  /// Parses "ttft:1.5s,tpot:100ms,e2e:10s,ttfa:3s" (any subset of the `limitable` metrics, each
  /// once; '=' also separates; a name may be any alias of metric_table, such as vLLM's "e2el").
  /// Throws std::invalid_argument naming the offending part.
  [[nodiscard]] static request_slo parse(std::string_view text);
  /// "ttft:1.5s,tpot:100ms".
  [[nodiscard]] std::string to_string() const {
    std::string s;
    auto put = [&](metric_id m, const std::optional<double>& v) {
      if (!v) return;
      if (!s.empty()) s += ',';
      s += tokchron::to_string(m);
      s += ':';
      objective o(slo_metric::ttft, slo_statistic::max, 100, slo_comparator::less_equal, *v);
      s += o.threshold_string();
    };
    put(metric_id::ttft, ttft_s);
    put(metric_id::tpot, tpot_s);
    put(metric_id::e2e, e2e_s);
    for (const auto& d : metric_table)
      if (d.id != metric_id::ttft && d.id != metric_id::tpot && d.id != metric_id::e2e)
        put(d.id, limit(d.id));
    return s;
  }
};

/// The result of `parse_request_slo`.
struct request_slo_parse_result {
  request_slo value;
  parse_error error;
  [[nodiscard]] explicit operator bool() const noexcept { return !error; }
};

/// Parses per-request limits. Never throws, never allocates.
[[nodiscard]] inline request_slo_parse_result parse_request_slo(std::string_view text) noexcept {
  request_slo_parse_result r;
  auto fail = [&](std::size_t at, std::size_t len, std::string_view msg) {
    r.error = parse_error{at, len, msg};
    return r;
  };
  std::size_t start = 0;
  bool any = false;
  for (;;) {
    std::size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::size_t b = start, e = end;
    while (b < e && detail::is_space(text[b])) ++b;
    while (e > b && detail::is_space(text[e - 1])) --e;
    const std::string_view item = text.substr(b, e - b);
    if (item.empty()) return fail(b, 0, "empty limit: expected name:value such as ttft:1.5s");
    std::size_t colon = item.find_first_of(":=");
    if (colon == std::string_view::npos)
      return fail(b, item.size(), "expected name:value such as ttft:1.5s");
    std::string_view name = item.substr(0, colon);
    while (!name.empty() && detail::is_space(name.back())) name.remove_suffix(1);
    const auto m = metric_from_name(name);
    if (!m || !request_slo::limitable(*m))
      return fail(b, name.size(),
                  "unknown per-request limit: expected a per-request time metric (ttft, tpot, "
                  "e2e, ttfa, reasoning_time, ttst, queue_time, ...)");
    std::optional<double>* slot = &r.value.limit(*m);
    if (*slot) return fail(b, name.size(), "limit given twice");
    // Reuse the objective parser for the value and its unit.
    std::size_t vb = colon + 1;
    while (vb < item.size() && detail::is_space(item[vb])) ++vb;
    const std::string_view value = item.substr(vb);
    std::size_t used = 0;
    const auto num = detail::parse_plain_number(value, used);
    if (!num) return fail(b + vb, value.size(), "expected a non-negative number with a unit");
    if (!detail::reads_back(value.substr(0, used), *num))
      return fail(b + vb, used,
                  "the limit has more digits than a double holds: it would be read as another "
                  "number");
    std::string_view unit = value.substr(used);
    while (!unit.empty() && detail::is_space(unit.front())) unit.remove_prefix(1);
    double scale = 0;
    if (unit == "s")
      scale = 1;
    else if (unit == "ms")
      scale = 1e-3;
    else if (unit == "us")
      scale = 1e-6;
    else if (unit == "ns")
      scale = 1e-9;
    else if (unit.empty())
      return fail(b + vb + used, 0, "a limit needs a unit: s, ms, us or ns");
    else
      return fail(b + static_cast<std::size_t>(unit.data() - item.data()), unit.size(),
                  "unknown time unit: expected s, ms, us or ns");
    *slot = *num * scale;
    any = true;
    if (end == text.size()) break;
    start = end + 1;
  }
  if (!any) return fail(0, text.size(), "no limits given");
  return r;
}

inline request_slo request_slo::parse(std::string_view text) {
  request_slo_parse_result r = parse_request_slo(text);
  if (!r) detail::throw_parse_error("goodput SLO", text, r.error);
  return r.value;
}

/// What a limit on a metric the request does not define means.
enum class missing_metric_rule : std::uint8_t {
  met,       ///< vLLM: the missing value counts as 0 and meets the limit
  not_good,  ///< AIPerf: the request is not good
  /// GuideLLM: the request has no verdict and is left out of the population (counted in
  /// `goodput_result::excluded`, not in attainment), unless another limit already failed it.
  excluded,
};

/// Goodput settings.
struct goodput_options {
  missing_metric_rule missing = missing_metric_rule::met;
};

/// The goodput settings of a tool's profile: vLLM (`all_met_missing_zero`) and GenAI-Perf or
/// canonical (`all_met_missing_ignored`) let a missing metric pass, AIPerf
/// (`all_met_missing_fails`) does not. Profiles without a per-request goodput (`none`, MLPerf's
/// `percentile_limits`) get the canonical rule.
[[nodiscard]] constexpr goodput_options goodput_options_for(const profile& p) noexcept {
  goodput_options o;
  o.missing = p.goodput == goodput_rule::all_met_missing_fails ? missing_metric_rule::not_good
                                                               : missing_metric_rule::met;
  return o;
}

/// Counts of one goodput run.
struct goodput_result {
  std::uint64_t requests = 0;                                      ///< finished requests seen
  std::uint64_t completed = 0;                                     ///< of which succeeded
  std::uint64_t good = 0;                                          ///< of which met every limit
  std::uint64_t missed_ttft = 0, missed_tpot = 0, missed_e2e = 0;  ///< per limit
  /// Misses of the other limits (`request_slo::other`), indexed by `metric_id`.
  std::array<std::uint64_t, metric_count> missed_other{};
  std::uint64_t missing = 0;  ///< not good only because a limited metric was undefined
  /// Left out of the population (`missing_metric_rule::excluded`): no limit failed and a limited
  /// metric was undefined. Counted in `requests`, not in attainment.
  std::uint64_t excluded = 0;
  /// The good requests' prompt tokens (those that reported a count) and output tokens.
  std::uint64_t good_prompt_tokens = 0, good_output_tokens = 0;
  /// Good requests without a prompt-token count (their prompt is not in `token_goodput`).
  std::uint64_t good_without_prompt_count = 0;
  double duration_s = 0;

  /// good / (requests - excluded); empty when no request has a verdict.
  [[nodiscard]] std::optional<double> attainment() const noexcept {
    if (requests <= excluded) return std::nullopt;
    return static_cast<double>(good) / static_cast<double>(requests - excluded);
  }
  /// good / duration in requests per second; empty unless duration > 0.
  [[nodiscard]] std::optional<double> goodput() const noexcept {
    if (!(duration_s > 0)) return std::nullopt;
    return static_cast<double>(good) / duration_s;
  }
  /// inference-perf's token goodput: the good requests' prompt and output tokens / duration, in
  /// tokens per second; empty unless duration > 0.
  [[nodiscard]] std::optional<double> token_goodput() const noexcept {
    if (!(duration_s > 0)) return std::nullopt;
    return static_cast<double>(good_prompt_tokens + good_output_tokens) / duration_s;
  }
  /// GuideLLM's output token goodput: the good requests' output tokens / duration; empty unless
  /// duration > 0.
  [[nodiscard]] std::optional<double> output_token_goodput() const noexcept {
    if (!(duration_s > 0)) return std::nullopt;
    return static_cast<double>(good_output_tokens) / duration_s;
  }
};

/// Counts good requests one finished request at a time. O(1) per request; single writer.
class goodput_counter {
 public:
  explicit goodput_counter(const request_slo& slo, const goodput_options& opt = {}) noexcept
      : slo_(slo), opt_(opt) {}

  /// Records one finished request's metrics (canonical, or as a profile saw it: its TTFT
  /// origin, TPOT and E2E rules); returns whether it was good.
  bool add(const request_metrics& m) noexcept {
    ++r_.requests;
    if (!m.counted()) return false;
    ++r_.completed;
    bool good = true, limit_missed = false, undetermined = false;
    auto check = [&](const std::optional<double>& limit, const std::optional<double>& value,
                     std::uint64_t& missed) {
      if (!limit) return;
      if (!value) {
        if (opt_.missing == missing_metric_rule::not_good) good = false;
        if (opt_.missing == missing_metric_rule::excluded) undetermined = true;
        return;
      }
      if (!(*value <= *limit)) {
        good = false;
        limit_missed = true;
        ++missed;
      }
    };
    check(slo_.ttft_s, m.ttft, r_.missed_ttft);
    check(slo_.tpot_s, m.tpot, r_.missed_tpot);
    check(slo_.e2e_s, m.e2e, r_.missed_e2e);
    for (const auto& d : metric_table) {
      const auto i = static_cast<std::size_t>(d.id);
      if (slo_.other[i]) check(slo_.other[i], m.value(d.id), r_.missed_other[i]);
    }
    if (undetermined && !limit_missed) {
      ++r_.excluded;
      return false;
    }
    if (good) {
      ++r_.good;
      r_.good_output_tokens += m.output_tokens;
      if (m.prompt_tokens)
        r_.good_prompt_tokens += *m.prompt_tokens;
      else
        ++r_.good_without_prompt_count;
    } else if (!limit_missed) {
      ++r_.missing;
    }
    return good;
  }
  /// Records a finished timeline (unfinished ones are ignored and return false).
  template <class Timeline>
  bool add_timeline(const Timeline& tl) noexcept {
    if (!tl.finished()) return false;
    return add(canonical_metrics(tl));
  }

  /// The counts, with goodput over `duration_s` seconds (the run's duration by the profile's
  /// definition).
  [[nodiscard]] goodput_result result(double duration_s) const noexcept {
    goodput_result g = r_;
    g.duration_s = duration_s;
    return g;
  }
  [[nodiscard]] const request_slo& slo() const noexcept { return slo_; }

 private:
  request_slo slo_;
  goodput_options opt_;
  goodput_result r_;
};

/// Goodput of a run summarised with `summary_options::keep_requests` under its profile's rule
/// and duration (throws std::invalid_argument when the summary kept no requests but has some).
[[nodiscard]] inline goodput_result goodput(const run_summary& s, const request_slo& slo,
                                            const profile& p) {
  if (s.requests_detail.size() != s.requests)
    TOKCHRON_THROW(std::invalid_argument,
                   "tokchron: goodput needs a run summary made with keep_requests");
  goodput_counter c(slo, goodput_options_for(p));
  for (const auto& r : s.requests_detail) c.add(r);
  return c.result(s.duration ? *s.duration : 0.0);
}

/// SLO attainment measured at one request rate.
struct attainment_point {
  double rate = 0;        ///< requests per second offered
  double attainment = 0;  ///< share of requests meeting every SLO, in [0, 1]
};

/// DistServe goodput: the highest rate whose attainment stays >= target.
struct distserve_goodput_result {
  std::optional<double> rate;     ///< requests per second; empty if the lowest rate misses
  std::optional<double> per_gpu;  ///< rate / gpus
  /// True when every measured rate met the target: the goodput is at least `rate` (the highest
  /// rate measured), not an interpolated crossing.
  bool at_least = false;
};

/// DistServe goodput from load points (any order): sorted by rate, the first point whose
/// attainment drops below `target` ends the range, and the goodput is the rate at which the
/// straight line between it and the previous point crosses the target. Throws
/// std::invalid_argument for a target outside (0, 1], gpus <= 0, or a non-finite point.
[[nodiscard]] inline distserve_goodput_result distserve_goodput(
    std::vector<attainment_point> points, double target = 0.9, double gpus = 1) {
  if (!(target > 0 && target <= 1))
    TOKCHRON_THROW(std::invalid_argument, "tokchron: attainment target must be in (0, 1]");
  if (!(gpus > 0 && std::isfinite(gpus)))
    TOKCHRON_THROW(std::invalid_argument, "tokchron: gpus must be positive");
  for (const auto& p : points)
    if (!(std::isfinite(p.rate) && p.rate >= 0 && p.attainment >= 0 && p.attainment <= 1))
      TOKCHRON_THROW(std::invalid_argument,
                     "tokchron: a load point needs a finite rate >= 0 and attainment in [0, 1]");
  distserve_goodput_result r;
  if (points.empty()) return r;
  std::stable_sort(
      points.begin(), points.end(),
      [](const attainment_point& a, const attainment_point& b) { return a.rate < b.rate; });
  if (points.front().attainment < target) return r;
  for (std::size_t i = 1; i < points.size(); ++i) {
    if (points[i].attainment >= target) continue;
    const attainment_point &a = points[i - 1], &b = points[i];
    const double t = (a.attainment - target) / (a.attainment - b.attainment);
    r.rate = a.rate + t * (b.rate - a.rate);
    r.per_gpu = *r.rate / gpus;
    return r;
  }
  r.rate = points.back().rate;
  r.per_gpu = *r.rate / gpus;
  r.at_least = true;
  return r;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_SLA_GOODPUT_HPP
