// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_EXPORT_SUMMARY_GAUGES_HPP
#define TOKCHRON_EXPORT_SUMMARY_GAUGES_HPP

/// \file
/// Run summaries and SLA verdicts as gauges in a snapshot (`tokchron_run_*`, `tokchron_slo_*`).
/// Several runs go into one snapshot by calling these once per run with labels that tell the
/// runs apart: a run's points join the families an earlier call made.

#include <cstddef>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "tokchron/config.hpp"
#include "tokchron/exposition/snapshot_data.hpp"
#include "tokchron/metrics/metric_table.hpp"
#include "tokchron/metrics/run_summary.hpp"
#include "tokchron/sla/objective.hpp"
#include "tokchron/sla/verdict.hpp"

TOKCHRON_BEGIN_NAMESPACE

namespace detail {
/// The gauge family `name` of `s`, appended (with `help` and `unit`) when `s` has none by that
/// name. Throws std::invalid_argument when `s` has one of another kind or unit.
inline metric_family& gauge_family(metrics_snapshot& s, const std::string& name, const char* help,
                                   const char* unit = "") {
  for (metric_family& f : s.families) {
    if (f.name != name) continue;
    if (f.kind != metric_kind::gauge || f.unit != unit)
      TOKCHRON_THROW(std::invalid_argument,
                     "tokchron: the snapshot has a family " + name + " that is not this gauge");
    return f;
  }
  return s.family(name, help, metric_kind::gauge, unit);
}
}  // namespace detail

// `run_summary` (metrics/run_summary.hpp) and `sla_verdict` (sla/verdict.hpp) are plain data
// already; exporters read them as they are. These add them to a snapshot as gauges.

/// Adds a run summary's scalar fields as gauges named `prefix` + field
/// (`tokchron_run_duration_seconds`, `..._request_throughput`, `..._output_throughput`,
/// `..._total_token_throughput`, `..._completed`, `..._failed`, `..._mean_concurrency`,
/// `..._peak_concurrency`) and each time distribution's percentiles as
/// `prometheus_name(metric, prefix)` gauges (`tokchron_run_e2e_seconds{percentile="95"}`; an
/// undefined value is left out), every point labelled `profile` plus `labels`.
inline void add_run_summary(metrics_snapshot& s, const run_summary& r, const label_set& labels = {},
                            const std::string& prefix = "tokchron_run_") {
  label_set base = labels;
  base.push_back(label{"profile", r.profile});
  auto gauge = [&](const std::string& name, const char* help, std::optional<double> v) {
    auto& f = detail::gauge_family(s, prefix + name, help);
    if (v) f.add(*v, base);
  };
  gauge("duration_seconds", "Run duration.", r.duration);
  gauge("request_throughput", "Completed requests per second.", r.request_throughput);
  gauge("output_throughput", "Output tokens per second.", r.output_throughput);
  gauge("total_token_throughput", "Prompt and output tokens per second.", r.total_token_throughput);
  gauge("completed", "Requests completed.", static_cast<double>(r.completed));
  gauge("failed", "Requests failed.", static_cast<double>(r.failed));
  gauge("mean_concurrency", "Sum of E2E latencies over the duration.", r.mean_concurrency);
  gauge("peak_concurrency", "Most requests in flight at once.",
        static_cast<double>(r.peak_concurrency));
  for (const auto& m : metric_table) {
    const distribution* d = r.of(m.id);
    if (d == nullptr || !m.is_time() || d->count == 0) continue;
    auto& f = detail::gauge_family(
        s, prometheus_name(m.id, prefix),
        "Percentiles of the run's distribution, by the profile's method.", "seconds");
    for (const auto& p : d->percentiles) {
      if (!p.value) continue;
      label_set l = base;
      l.push_back(label{"percentile", detail::shortest_number(p.percent)});
      f.add(*p.value, std::move(l));
    }
  }
}

/// Adds SLA verdicts as gauges `prefix` + `pass` (1 pass, 0 fail; no point when undecided),
/// `decided`, `measured`, `threshold`, `margin` and `samples`, each point labelled `labels` plus
/// `objective` ("p95(ttft) < 1.5s"). Values in the metric's base unit (seconds, tokens/s).
inline void add_verdicts(metrics_snapshot& s, const sla_verdict& v, const label_set& labels = {},
                         const std::string& prefix = "tokchron_slo_") {
  // The families first (a later `gauge_family` call may move them), then the points.
  const char* const names[] = {"pass", "decided", "measured", "threshold", "margin", "samples"};
  const char* const helps[] = {"1 when the objective passes, 0 when it fails.",
                               "1 when the data decide the objective, 0 when not.",
                               "The measured statistic.",
                               "The objective's threshold.",
                               "Signed headroom (negative: missed by that much).",
                               "Samples judged."};
  std::size_t at[std::size(names)];
  for (std::size_t i = 0; i < std::size(names); ++i)
    at[i] = static_cast<std::size_t>(&detail::gauge_family(s, prefix + names[i], helps[i]) -
                                     s.families.data());
  auto fam = [&](std::size_t i) -> metric_family& { return s.families[at[i]]; };
  for (const auto& x : v.verdicts) {
    label_set l = labels;
    l.push_back(label{"objective", x.target.to_string()});
    if (x.decided()) fam(0).add(x.passed() ? 1.0 : 0.0, l);
    fam(1).add(x.decided() ? 1.0 : 0.0, l);
    if (x.measured) fam(2).add(*x.measured, l);
    fam(3).add(x.target.threshold, l);
    if (x.margin) fam(4).add(*x.margin, l);
    fam(5).add(static_cast<double>(x.samples), l);
  }
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_EXPORT_SUMMARY_GAUGES_HPP
