// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_SLA_MONITOR_HPP
#define TOKCHRON_SLA_MONITOR_HPP

/// \file
/// Online SLO monitoring: objectives judged over sliding windows of the injected clock, with
/// error-budget burn rates and the SRE workbook's multi-window, multi-burn-rate alerts.
///
/// Each (metric, window length) the SLA and the alert rules need is a `windowed` estimator
/// (quantile/windowed.hpp); recording a finished request costs one clock read plus one
/// estimator `add` per (metric, window): a few nanoseconds each with `log_histogram`. `status()`
/// merges slices and judges (O(windows x slices x buckets)): call it on a timer, not per request.
///
/// **Burn rate.** A percentile objective `pq(m) < T` allows a share 1 - q of requests to miss T
/// (its error budget); over a window, burn rate = (misses / requests) / (1 - q), so 1 spends the
/// budget exactly over the SLO period. (`>` objectives allow a share q below T.) An alert rule
/// fires when both its long and its short window burn faster than its threshold (the short one
/// makes the alert stop soon after the problem does). The workbook's rules for a 30-day period
/// are 1 h / 5 min at 14.4 (2% of the budget in an hour), 6 h / 30 min at 6 (5% in 6 h), and
/// 3 d / 6 h at 1 (10% in 3 days); `sre_burn_rules(period)` scales the windows to another
/// period with the same thresholds. Mean, max and min objectives have no event budget: they get
/// window verdicts but no burn rate. With a histogram estimator a sample within its relative
/// error of T may be counted on either side of it.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "tokchron/clock.hpp"
#include "tokchron/config.hpp"
#include "tokchron/metrics/canonical.hpp"
#include "tokchron/quantile/log_histogram.hpp"
#include "tokchron/quantile/windowed.hpp"
#include "tokchron/sla/evaluator.hpp"
#include "tokchron/sla/objective.hpp"
#include "tokchron/sla/verdict.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// A multi-window burn-rate alert: fires when both windows burn faster than `threshold`.
template <class Duration = std::chrono::nanoseconds>
struct basic_burn_rule {
  Duration long_window{};
  Duration short_window{};
  double threshold = 1;
  std::string_view severity = "page";  ///< a label ("page", "ticket")
};
using burn_rule = basic_burn_rule<>;

/// The SRE workbook's three rules, with windows scaled to an SLO period (30 days gives 1 h/5 min
/// at 14.4 and 6 h/30 min at 6, both "page", and 3 d/6 h at 1, "ticket").
[[nodiscard]] inline std::vector<burn_rule> sre_burn_rules(
    std::chrono::nanoseconds period = std::chrono::hours(24 * 30)) {
  if (period.count() <= 0)
    TOKCHRON_THROW(std::invalid_argument, "tokchron: the SLO period must be positive");
  // fractions of 30 days: 1 h = 1/720, 5 min = 1/8640, 6 h = 1/120, 30 min = 1/1440, 3 d = 1/10
  auto part = [&](std::int64_t div) { return std::chrono::nanoseconds(period.count() / div); };
  return {burn_rule{part(720), part(8640), 14.4, "page"},
          burn_rule{part(120), part(1440), 6.0, "page"},
          burn_rule{part(10), part(120), 1.0, "ticket"}};
}

/// One objective over one window.
template <class Duration>
struct basic_window_status {
  Duration window{};
  verdict result;                   ///< judged on the window's samples
  std::optional<double> burn_rate;  ///< percentile objectives with samples only
};

/// One objective over every status window.
template <class Duration>
struct basic_objective_status {
  objective target;
  std::vector<basic_window_status<Duration>> windows;
};

/// One (objective, rule) pair.
struct burn_alert {
  std::size_t objective_index = 0;
  std::size_t rule_index = 0;
  std::string_view severity;
  bool firing = false;
  std::optional<double> long_burn, short_burn;
};

/// Everything the monitor knows now.
template <class Duration>
struct basic_monitor_status {
  std::vector<basic_objective_status<Duration>> objectives;
  std::vector<burn_alert> alerts;
  /// True when any alert fires.
  [[nodiscard]] bool firing() const noexcept {
    return std::any_of(alerts.begin(), alerts.end(), [](const burn_alert& a) { return a.firing; });
  }
};

/// Monitor settings.
template <class Duration, class Estimator>
struct basic_monitor_options {
  /// Windows every objective is judged over (e.g. 1 min and 5 min).
  std::vector<Duration> windows;
  /// Burn-rate alerts (empty: none); their windows are added to the ones monitored.
  std::vector<basic_burn_rule<Duration>> rules;
  /// Slices per window (more: a smoother window, more memory); reduced for a window that does
  /// not split into that many whole clock ticks.
  std::size_t slices = 10;
  evaluation_options evaluation{};
  Estimator prototype{};
};

/// Judges an SLA over sliding windows on `Clock`.
///
/// \code
///   tokchron::slo_monitor<> mon(tokchron::sla::parse("p95(ttft) < 1.5s, p95(tpot) < 100ms"),
///                               {{std::chrono::minutes(1), std::chrono::minutes(5)},
///                                tokchron::sre_burn_rules(std::chrono::hours(24))});
///   mon.record(tokchron::canonical_metrics(tl));   // each finished request
///   auto st = mon.status();                         // on a timer: verdicts, burns, alerts
/// \endcode
///
/// Recording is noexcept (a refused sample is counted by the estimator; a failed request only
/// counts in `failed()`). Thread safety: one writer; `status()` only while nobody records.
template <class Clock = default_clock, class Estimator = log_histogram>
class slo_monitor {
 public:
  using clock_type = Clock;
  using duration = typename Clock::duration;
  using time_point = typename Clock::time_point;
  using window_type = windowed<Estimator, Clock>;
  using options = basic_monitor_options<duration, Estimator>;
  using status_type = basic_monitor_status<duration>;

  /// Throws std::invalid_argument for an empty SLA, no windows, a rule whose short window is
  /// not shorter than its long one, a threshold <= 0, or windows `windowed` refuses.
  slo_monitor(sla s, options opt, Clock clock = Clock{})
      : sla_(std::move(s)), opt_(std::move(opt)), clock_(clock) {
    if (sla_.objectives.empty()) TOKCHRON_THROW(std::invalid_argument, "tokchron: empty SLA");
    if (opt_.windows.empty() && opt_.rules.empty())
      TOKCHRON_THROW(std::invalid_argument, "tokchron: a monitor needs at least one window");
    detail::check_confidence(opt_.evaluation.confidence);
    for (const auto& r : opt_.rules)
      if (!(r.short_window < r.long_window) || r.short_window.count() <= 0 || !(r.threshold > 0))
        TOKCHRON_THROW(std::invalid_argument,
                       "tokchron: a burn rule needs 0 < short window < long window and a "
                       "positive threshold");
    std::vector<duration> lengths = opt_.windows;
    for (const auto& r : opt_.rules) {
      lengths.push_back(r.long_window);
      lengths.push_back(r.short_window);
    }
    std::sort(lengths.begin(), lengths.end());
    lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
    lengths_ = lengths;
    for (const objective& o : sla_.objectives) {
      if (std::find(metrics_.begin(), metrics_.end(), o.metric) == metrics_.end())
        metrics_.push_back(o.metric);
    }
    windows_.reserve(metrics_.size() * lengths_.size());
    for (std::size_t m = 0; m < metrics_.size(); ++m)
      for (duration w : lengths_) windows_.emplace_back(w, slices_for(w), clock_, opt_.prototype);
  }

  /// Records one finished request's canonical metrics at the clock's now.
  void record(const request_metrics& m) noexcept { record(clock_.now(), m); }
  /// Records one finished request's metrics at `t` (a time already read).
  void record(time_point t, const request_metrics& m) noexcept {
    if (!m.succeeded) {
      ++failed_;
      return;
    }
    ++succeeded_;
    for_each_metric_value(m, [&](metric_id k, double x) { record(t, k, x); });
  }
  /// Records a finished timeline at the clock's now: its canonical metrics and, when it keeps
  /// chunks, its per-token ITL.
  template <class Timeline>
  void record_timeline(const Timeline& tl) noexcept {
    if (!tl.finished()) return;
    const time_point t = clock_.now();
    record(t, canonical_metrics(tl));
    if constexpr (Timeline::store_type::keeps_chunks) {
      if (tl.succeeded() && monitors(slo_metric::itl))
        for_each_itl_per_token(tl, [&](auto gap) { record(t, slo_metric::itl, to_seconds(gap)); });
    }
  }
  /// Records one sample of `metric` at `t` (ignored when no objective uses the metric).
  void record(time_point t, slo_metric metric, double x) noexcept {
    for (std::size_t m = 0; m < metrics_.size(); ++m) {
      if (metrics_[m] != metric) continue;
      for (std::size_t w = 0; w < lengths_.size(); ++w)
        windows_[m * lengths_.size() + w].add(t, static_cast<typename window_type::value_type>(x));
    }
  }

  /// Verdicts per objective and status window, burn rates, and alerts, as of the clock's now.
  [[nodiscard]] status_type status() const { return status(clock_.now()); }
  /// The same as of `now`.
  [[nodiscard]] status_type status(time_point now) const {
    status_type st;
    for (std::size_t i = 0; i < sla_.objectives.size(); ++i) {
      const objective& o = sla_.objectives[i];
      basic_objective_status<duration> os;
      os.target = o;
      for (duration w : opt_.windows) os.windows.push_back(judge(o, w, now));
      st.objectives.push_back(std::move(os));
      for (std::size_t r = 0; r < opt_.rules.size(); ++r) {
        const auto& rule = opt_.rules[r];
        burn_alert a;
        a.objective_index = i;
        a.rule_index = r;
        a.severity = rule.severity;
        a.long_burn = judge(o, rule.long_window, now).burn_rate;
        a.short_burn = judge(o, rule.short_window, now).burn_rate;
        a.firing = a.long_burn && a.short_burn && *a.long_burn > rule.threshold &&
                   *a.short_burn > rule.threshold;
        st.alerts.push_back(a);
      }
    }
    return st;
  }

  /// The window estimator of `metric` over `window` (nullptr when not monitored).
  [[nodiscard]] const window_type* window(slo_metric metric, duration w) const noexcept {
    for (std::size_t m = 0; m < metrics_.size(); ++m) {
      if (metrics_[m] != metric) continue;
      for (std::size_t k = 0; k < lengths_.size(); ++k)
        if (lengths_[k] == w) return &windows_[m * lengths_.size() + k];
    }
    return nullptr;
  }
  [[nodiscard]] const sla& objectives() const noexcept { return sla_; }
  [[nodiscard]] std::uint64_t succeeded() const noexcept { return succeeded_; }
  [[nodiscard]] std::uint64_t failed() const noexcept { return failed_; }
  [[nodiscard]] const Clock& clock() const noexcept { return clock_; }

 private:
  // The most slices, up to the option, that split `w` into whole ticks.
  [[nodiscard]] std::size_t slices_for(duration w) const noexcept {
    std::size_t s = opt_.slices == 0 ? 1 : opt_.slices;
    while (s > 1 && w.count() % static_cast<typename duration::rep>(s) != 0) --s;
    return s;
  }
  [[nodiscard]] bool monitors(slo_metric metric) const noexcept {
    return std::find(metrics_.begin(), metrics_.end(), metric) != metrics_.end();
  }
  [[nodiscard]] basic_window_status<duration> judge(const objective& o, duration w,
                                                    time_point now) const {
    basic_window_status<duration> ws;
    ws.window = w;
    const window_type* win = window(o.metric, w);
    const Estimator snap = win->snapshot(now);
    ws.result = evaluate(o, snap, opt_.evaluation);
    if (o.statistic == slo_statistic::percentile && ws.result.misses && ws.result.samples > 0) {
      const double budget = o.upper_bound() ? 1 - o.quantile() : o.quantile();
      if (budget > 0)
        ws.burn_rate = static_cast<double>(*ws.result.misses) /
                       static_cast<double>(ws.result.samples) / budget;
    }
    return ws;
  }

  sla sla_;
  options opt_;
  Clock clock_;
  std::vector<slo_metric> metrics_;
  std::vector<duration> lengths_;
  std::vector<window_type> windows_;
  std::uint64_t succeeded_ = 0, failed_ = 0;
};

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_SLA_MONITOR_HPP
